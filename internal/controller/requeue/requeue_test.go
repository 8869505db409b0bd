package requeue

import (
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestSoonest(t *testing.T) {
	none, s1, s2 := reconcile.Result{}, reconcile.Result{RequeueAfter: time.Second}, reconcile.Result{RequeueAfter: 2 * time.Second}
	cases := []struct{ a, b, want reconcile.Result }{
		{none, none, none}, {none, s1, s1}, {s1, none, s1}, {s1, s2, s1}, {s2, s1, s1},
	}
	for _, tc := range cases {
		if got := Soonest(tc.a, tc.b); got != tc.want {
			t.Errorf("Soonest(%v, %v) = %v; want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
