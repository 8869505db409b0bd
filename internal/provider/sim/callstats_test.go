package sim

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/internal/testenv"
)

// GET /calls counts a class's creates while they wait out their latency,
// and keeps the most at once after they end.
func TestCallStatsCountCreatesInFlight(t *testing.T) {
	s, fc := newTestSim(t, Options{})
	srv := httptest.NewServer(s.AdminHandler())
	t.Cleanup(srv.Close)
	mc := class("slow", `{"region":"local","zones":["local-a"],"faults":{"create":{"latency":"10s"}}}`)
	done := make(chan error, 3)
	for i := range 3 {
		go func() {
			_, err := create(s, machine(fmt.Sprintf("m%d", i), "slow"), mc)
			done <- err
		}()
	}
	testenv.Eventually(t, 30*time.Second, "the creates to wait on the clock", func() (bool, error) { return s.waiting.Load() == 3, nil })
	var st CallStats
	adminCall(t, srv, "GET", "/calls?namespace=default&class=slow", "", http.StatusOK, &st)
	if want := (CallStats{Creates: 3, MaxCreates: 3}); st != want {
		t.Fatalf("GET /calls while 3 creates wait: %+v, want %+v", st, want)
	}
	fc.Step(10 * time.Second)
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	adminCall(t, srv, "GET", "/calls?namespace=default&class=slow", "", http.StatusOK, &st)
	if want := (CallStats{MaxCreates: 3}); st != want {
		t.Fatalf("GET /calls after the creates: %+v, want %+v", st, want)
	}
	adminCall(t, srv, "GET", "/calls?class=slow", "", http.StatusBadRequest, nil)
}
