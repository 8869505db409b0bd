package cli

import (
	"fmt"
	"io"
	"log/slog"
)

// NewLogger returns the logger of a program's --log-level and --log-format
// (text or json), writing to w. Both must have been checked (ParseLevel,
// CheckLogFormat).
func NewLogger(w io.Writer, level, format string) *slog.Logger {
	l, _ := ParseLevel(level)
	opts := &slog.HandlerOptions{Level: l}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// ParseLevel parses a --log-level: debug, info, warn or error.
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("%q: want debug, info, warn or error", s)
	}
	return l, nil
}

// CheckLogFormat checks a --log-format: text or json.
func CheckLogFormat(s string) error {
	if s != "text" && s != "json" {
		return fmt.Errorf("%q: want text or json", s)
	}
	return nil
}
