package requeue

import (
	"context"
	"errors"
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

func TestRunStopsAtErrorsAndStopAndKeepsTheSoonestRequeue(t *testing.T) {
	var ran []int
	step := func(i int, after time.Duration, err error) Step[*bool] {
		return func(_ context.Context, stop *bool) (reconcile.Result, error) {
			ran = append(ran, i)
			*stop = i == 3
			return reconcile.Result{RequeueAfter: after}, err
		}
	}
	stop := false
	res, err := Run(context.Background(), &stop, func() bool { return stop },
		step(1, 5*time.Second, nil), step(2, time.Second, nil), step(3, 0, nil), step(4, 0, nil))
	if err != nil || res.RequeueAfter != time.Second || len(ran) != 3 {
		t.Fatalf("ran %v, result %v, err %v; want steps 1-3, requeue 1s", ran, res, err)
	}
	ran, stop = nil, false
	boom := errors.New("boom")
	if _, err := Run(context.Background(), &stop, func() bool { return false }, step(1, 0, boom), step(2, 0, nil)); err != boom || len(ran) != 1 {
		t.Fatalf("after an error: ran %v, err %v", ran, err)
	}
}

func TestResultDropsTheRequeueBesideAnError(t *testing.T) {
	res := reconcile.Result{RequeueAfter: time.Second}
	boom := errors.New("boom")
	if got, err := Result(res, boom); err != boom || !got.IsZero() {
		t.Errorf("Result(%v, %v) = %v, %v; want the error alone", res, boom, got, err)
	}
	if got, err := Result(res, nil); err != nil || got != res {
		t.Errorf("Result(%v, nil) = %v, %v; want the result", res, got, err)
	}
}

func TestDeadlineAsksInSteps(t *testing.T) {
	cases := []struct{ left, want time.Duration }{
		{20 * time.Minute, DeadlineStep}, {DeadlineStep, DeadlineStep}, {10 * time.Second, 10 * time.Second},
	}
	for _, tc := range cases {
		if got := Deadline(tc.left).RequeueAfter; got != tc.want {
			t.Errorf("Deadline(%s) asks for %s; want %s", tc.left, got, tc.want)
		}
	}
}
