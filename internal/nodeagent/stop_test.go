package nodeagent

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestStopDuringRegistrationSaysStopped replays a stop that came while the
// registration's status write was answered: the write landed (the Node
// Ready) and its answer was lost to the stop. The agent must still post
// NotReady, or the Node stays Ready with nothing behind it until its
// Lease runs out (the CI failure of TestAgentProcess).
func TestStopDuringRegistrationSaysStopped(t *testing.T) {
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(cluster.RESTConfig())
	const node = "vm-stop-registering"
	ud, md, _ := seed(t, cs, node, "millwright-libvirt://default/"+node)
	cfg, err := ParseSeed(ud, md)
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	opts := Options{CertDir: t.TempDir(), Logf: func(format string, args ...any) { fmt.Fprintf(&logs, format+"\n", args...) }}
	opts.setDefaults()
	a, err := bootstrap(ctx, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	// The agent's client, but the answer to the Node's status write is
	// lost to a stop that comes as it lands.
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var lost atomic.Bool
	rc := rest.CopyConfig(cluster.RESTConfig())
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil && req.Method == http.MethodPatch && strings.HasSuffix(req.URL.Path, "/nodes/"+node+"/status") && lost.CompareAndSwap(false, true) {
				resp.Body.Close()
				stop()
				return nil, context.Canceled
			}
			return resp, err
		})
	})
	a.client = kubernetes.NewForConfigOrDie(rc)

	if a.registerUntilStopped(runCtx) {
		t.Fatal("registered although stopped during the registration")
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !checkStopped(t, n, "after a stop during the registration") {
		t.Error("the Node has no Ready condition: the registration's status write did not land")
	}
	if !strings.Contains(logs.String(), "stopped") {
		t.Errorf("the agent's log does not say it stopped:\n%s", logs.String())
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
