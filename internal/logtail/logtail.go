// Package logtail reads the last lines of a log file, for error messages
// that show what a process or a VM said last.
package logtail

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// window is how much of the file's end is read: the last lines of even a
// chatty log are within it.
const window = 64 << 10

// Tail returns the last n lines of the file at path. A file that cannot be
// read gives a note saying why instead, so the result can go straight into
// an error message.
func Tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > window {
		_, _ = f.Seek(fi.Size()-window, io.SeekStart)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(reading log: %v)", err)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
