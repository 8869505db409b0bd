package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The audit log's reads are counted once each, in the window, by client;
// writes, a watch's end and a line still being written are not.
func TestAuditReadsCountsEachReadOnceByClient(t *testing.T) {
	lines := `{"stage":"ResponseComplete","verb":"get","userAgent":"millwright-sim/v0.1.0 (linux/amd64)","requestReceivedTimestamp":"2026-12-05T10:00:01.000000Z","user":{"username":"admin"},"objectRef":{"resource":"nodes","name":"m1","apiVersion":"v1"}}
{"stage":"ResponseComplete","verb":"get","userAgent":"millwright-sim/v0.1.0 (linux/amd64)","requestReceivedTimestamp":"2026-12-05T10:00:02.000000Z","user":{"username":"admin"},"objectRef":{"resource":"nodes","name":"m2","apiVersion":"v1"}}
{"stage":"ResponseComplete","verb":"get","userAgent":"kube-controller-manager/v1.36.3 (linux/amd64) kubernetes/abc/system:serviceaccount:kube-system:node-controller","requestReceivedTimestamp":"2026-12-05T10:00:02.500000Z","user":{"username":"system:serviceaccount:kube-system:node-controller"},"objectRef":{"resource":"nodes","name":"m1","apiVersion":"v1"}}
{"stage":"ResponseStarted","verb":"watch","userAgent":"millwright-manager/v1","requestReceivedTimestamp":"2026-12-05T10:00:03.000000Z","user":{"username":"admin"},"objectRef":{"resource":"machines","apiGroup":"machine.millwright.dev","apiVersion":"v1alpha1"}}
{"stage":"ResponseComplete","verb":"watch","userAgent":"millwright-manager/v1","requestReceivedTimestamp":"2026-12-05T10:00:03.000000Z","user":{"username":"admin"},"objectRef":{"resource":"machines","apiGroup":"machine.millwright.dev","apiVersion":"v1alpha1"}}
{"stage":"ResponseComplete","verb":"list","userAgent":"millwright-manager/v1","requestReceivedTimestamp":"2026-12-05T10:00:04.000000Z","user":{"username":"admin"},"objectRef":{"resource":"pods","apiVersion":"v1"}}
{"stage":"ResponseComplete","verb":"create","userAgent":"millwright-manager/v1","requestReceivedTimestamp":"2026-12-05T10:00:04.000000Z","user":{"username":"admin"},"objectRef":{"resource":"machines","apiVersion":"v1alpha1"}}
{"stage":"ResponseComplete","verb":"get","userAgent":"kwok/v0.8.0","requestReceivedTimestamp":"2026-12-05T10:00:09.000000Z","user":{"username":"admin"},"objectRef":{"resource":"pods","subresource":"status","apiVersion":"v1"}}
{"stage":"ResponseComplete","verb":"get","userAgent":"kwok`
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time { return time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC).Add(mustDuration(t, s)) }

	got, err := auditReads(path, 0, at("1s"), at("9s"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"millwright-sim GET nodes":                            2,
		"kube-controller-manager (node-controller) GET nodes": 1,
		"millwright-manager WATCH machines":                   1,
		"millwright-manager LIST pods":                        1,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reads %v; want %v", got, want)
	}

	// From an offset on: the line there and after, up to the last whole one.
	offset := int64(strings.Index(lines, `{"stage":"ResponseComplete","verb":"get","userAgent":"kwok/v0.8.0"`))
	got, err = auditReads(path, offset, at("0s"), at("1m"))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]float64{"kwok GET pods/status": 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("from offset %d: reads %v; want %v", offset, got, want)
	}
}

func TestTopReadsMostFirstAboveTheLeast(t *testing.T) {
	got := topReads(map[string]float64{"a GET x": 0.5, "b LIST y": 2, "c GET z": 0.01, "d GET w": 0.5}, 0.05)
	want := []string{"b LIST y 2.00", "a GET x 0.50", "d GET w 0.50"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("topReads %q; want %q", got, want)
	}
}

func mustDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
