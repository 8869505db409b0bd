package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// auditEvent is what the benchmark reads of one line of the API server's
// audit log (-audit-reads).
type auditEvent struct {
	Stage     string    `json:"stage"`
	Verb      string    `json:"verb"`
	UserAgent string    `json:"userAgent"`
	Received  time.Time `json:"requestReceivedTimestamp"`
	User      struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
}

// kubeSystemSA is the prefix of kube-controller-manager's controllers'
// users (--use-service-account-credentials): which controller read.
const kubeSystemSA = "system:serviceaccount:kube-system:"

// read reports whether the event is one read request, counted once: a
// get or list when answered, a watch when it starts.
func (e *auditEvent) read() bool {
	switch e.Verb {
	case "get", "list":
		return e.Stage == "ResponseComplete"
	case "watch":
		return e.Stage == "ResponseStarted"
	}
	return false
}

// key names the reader and what it read: "client VERB resource", the
// client being the user agent's program, and for kube-system's service
// accounts the account (kube-controller-manager's controller).
func (e *auditEvent) key() string {
	client, _, _ := strings.Cut(e.UserAgent, "/")
	if client == "" {
		client = e.User.Username
	}
	if sa, ok := strings.CutPrefix(e.User.Username, kubeSystemSA); ok {
		client += " (" + sa + ")"
	}
	what := "-"
	if e.ObjectRef != nil && e.ObjectRef.Resource != "" {
		what = resourceKey(e.ObjectRef.Resource, e.ObjectRef.Subresource)
	}
	return client + " " + strings.ToUpper(e.Verb) + " " + what
}

// auditReads counts the read requests the API server received in
// [from, to), by auditEvent.key, reading the audit log from offset on (a
// line still being written at its end is left out).
func auditReads(path string, offset int64, from, to time.Time) (map[string]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	counts := map[string]float64{}
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			return counts, nil
		}
		if err != nil {
			return nil, err
		}
		var e auditEvent
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("%s: %w: %.200s", path, err, line)
		}
		if e.read() && !e.Received.Before(from) && e.Received.Before(to) {
			counts[e.key()]++
		}
	}
}

// topReads are the readers of counts with the most reads per Machine, at
// least min each, most first: "client VERB resource 1.23".
func topReads(perMachine map[string]float64, min float64) []string {
	keys := make([]string, 0, len(perMachine))
	for k, v := range perMachine {
		if v >= min {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if perMachine[keys[i]] != perMachine[keys[j]] {
			return perMachine[keys[i]] > perMachine[keys[j]]
		}
		return keys[i] < keys[j]
	})
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = fmt.Sprintf("%s %.2f", k, perMachine[k])
	}
	return lines
}
