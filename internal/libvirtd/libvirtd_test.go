package libvirtd

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/internal/localcluster"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// TestStopWaitsForOtherUsers checks that the daemons Ensure started are
// stopped only once no other process uses them, and then are. When they
// run already (another test binary, or the host's service manager started
// them) Ensure must start nothing and Stop must leave them running.
func TestStopWaitsForOtherUsers(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d, err := Ensure(ctx, dir)
	if err != nil {
		t.Fatalf("FAIL: this test needs libvirtd and virtlogd: %v", err)
	}
	if !answers(Socket) || !answers(VirtlogdSocket) {
		t.Fatal("the daemons do not answer after Ensure")
	}
	if !d.Started() {
		if err := d.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if !answers(Socket) {
			t.Fatal("Stop stopped a libvirtd it had not started")
		}
		return
	}

	// Another user: a live process recorded as using the daemons.
	other, err := localcluster.StartProcess("other-user", "/bin/sleep", []string{"600"}, nil, filepath.Join(dir, "other.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Stop(time.Second)
	if err := os.WriteFile(filepath.Join(usersDir, strconv.Itoa(other.Pid())), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- d.Stop(ctx) }()
	testenv.Consistently(t, 3*time.Second, "the daemons running while another process uses them", func() (bool, error) {
		select {
		case err := <-stopped:
			t.Fatalf("Stop returned (%v) while another process uses the daemons", err)
		default:
		}
		return answers(Socket) && answers(VirtlogdSocket), nil
	})
	if err := other.Stop(time.Second); err != nil {
		t.Logf("stopping the other user: %v", err)
	}
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Stop did not return after the other user went")
	}
	if answers(Socket) || answers(VirtlogdSocket) {
		t.Fatal("the daemons Ensure started still answer after Stop")
	}
}
