package drain

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

func TestOptionsDefaults(t *testing.T) {
	o := Options{}.withDefaults()
	if o.VolumeDetachTimeout != DefaultVolumeDetachTimeout || o.PollInterval != DefaultPollInterval ||
		o.RetryInterval != DefaultRetryInterval || o.Now == nil {
		t.Errorf("defaults not filled in: %+v", o)
	}
	set := Options{VolumeDetachTimeout: time.Second, PollInterval: 2 * time.Second, RetryInterval: 3 * time.Second}.withDefaults()
	if set.VolumeDetachTimeout != time.Second || set.PollInterval != 2*time.Second || set.RetryInterval != 3*time.Second {
		t.Errorf("set options overridden: %+v", set)
	}
}

func TestFinish(t *testing.T) {
	opts := Options{}.withDefaults()
	wait := &v1alpha1.VolumeWait{Pod: "db/pg-0"}
	for _, tc := range []struct {
		name        string
		res         Result
		wait        *v1alpha1.VolumeWait
		wantDone    bool
		wantRequeue time.Duration
	}{
		{"nothing left", Result{}, nil, true, 0},
		{"nothing left but a volume wait", Result{}, wait, false, DefaultPollInterval},
		{"pods terminating", Result{Remaining: 2, Evicted: 2}, nil, false, DefaultPollInterval},
		{"only blocked pods left", Result{Remaining: 2, Blocked: 2}, nil, false, DefaultRetryInterval},
		{"only blocked and failed pods left", Result{Remaining: 3, Blocked: 2, Failed: 1}, nil, false, DefaultRetryInterval},
		{"blocked pods and a terminating one", Result{Remaining: 3, Blocked: 2}, nil, false, DefaultPollInterval},
		{"blocked pods and a volume wait", Result{Remaining: 2, Blocked: 2}, wait, false, DefaultPollInterval},
		{"blocked pods and some evicted", Result{Remaining: 3, Blocked: 2, Evicted: 1}, nil, false, DefaultPollInterval},
		{"gone pods are not remaining", Result{Remaining: -1}, nil, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := tc.res
			res.finish(&v1alpha1.DrainStatus{VolumeWait: tc.wait}, opts)
			if res.Done != tc.wantDone || res.RequeueAfter != tc.wantRequeue || res.Remaining < 0 {
				t.Errorf("finish: done %v, requeue %s, remaining %d; want done %v, requeue %s",
					res.Done, res.RequeueAfter, res.Remaining, tc.wantDone, tc.wantRequeue)
			}
		})
	}
}

func TestRender(t *testing.T) {
	pg0 := pod("db", "pg-0", claim("a"))
	pg1 := pod("db", "pg-1", claim("b"))
	withVolumes := newPlan([]corev1.Pod{pg0, pg1}, nil, nil)
	for _, tc := range []struct {
		name   string
		r      report
		res    Result
		status v1alpha1.DrainStatus
		opts   Options
		p      plan
		want   string
	}{
		{
			name:   "the lead's example",
			r:      report{blocked: []string{"a/x", "a/y"}, still: []string{"vol-1"}},
			res:    Result{Evicted: 3, Blocked: 2, Remaining: 6},
			status: v1alpha1.DrainStatus{Attempts: 4, VolumeWait: &v1alpha1.VolumeWait{Pod: "db/pg-0"}},
			opts:   Options{MaxEvictRetries: 10},
			p:      withVolumes,
			want:   "evicted 3 pods, 2 blocked by PodDisruptionBudget (attempt 4/10: a/x, a/y), waiting for volume vol-1 of db/pg-0 to detach",
		},
		{
			name:   "many blocked pods are counted, not all named",
			r:      report{blocked: []string{"a/1", "a/2", "a/3", "a/4", "a/5"}},
			res:    Result{Blocked: 5, Remaining: 5},
			status: v1alpha1.DrainStatus{Attempts: 1},
			opts:   Options{MaxEvictRetries: 3},
			want:   "5 blocked by PodDisruptionBudget (attempt 1/3: a/1, a/2, a/3 and 2 more)",
		},
		{
			name:   "deleted after refusals, a failure, terminating pods",
			r:      report{terminating: 2, firstErr: "a/z: boom"},
			res:    Result{Deleted: 1, Failed: 1, Remaining: 3},
			status: v1alpha1.DrainStatus{Attempts: 4},
			opts:   Options{MaxEvictRetries: 3},
			want:   "deleted 1 pod after 4 refused eviction rounds, 1 failed (a/z: boom), 2 pods terminating",
		},
		{
			name: "forced",
			res:  Result{Deleted: 4, Remaining: 4},
			opts: Options{Force: true},
			want: "force-deleted 4 pods",
		},
		{
			name:   "a pod alone holds back the next pod with volumes",
			r:      report{terminating: 1},
			res:    Result{Remaining: 2},
			status: v1alpha1.DrainStatus{VolumeWait: &v1alpha1.VolumeWait{Pod: "db/pg-0"}},
			p:      newPlan([]corev1.Pod{pod("db", "pg-0", claim("a"), deleting(30)), pg1}, nil, nil),
			want:   "waiting for db/pg-0 to terminate before the next pod with volumes, 1 pod terminating",
		},
		{
			name:   "the last pod with volumes is only counted",
			r:      report{terminating: 1},
			res:    Result{Remaining: 1},
			status: v1alpha1.DrainStatus{VolumeWait: &v1alpha1.VolumeWait{Pod: "db/pg-0"}},
			p:      newPlan([]corev1.Pod{pod("db", "pg-0", claim("a"), deleting(30))}, nil, nil),
			want:   "1 pod terminating",
		},
		{
			name: "timed out and done",
			r:    report{gaveUp: "gave up waiting for volume vol-1 of db/pg-0 to detach after 2m0s"},
			res:  Result{Done: true},
			p:    newPlan([]corev1.Pod{pod("kube-system", "agent", owned("DaemonSet", true))}, nil, nil),
			want: "gave up waiting for volume vol-1 of db/pg-0 to detach after 2m0s, drained (1 DaemonSet or mirror pod stays)",
		},
		{
			name: "nothing to say but pods left",
			res:  Result{Remaining: 2},
			want: "2 pods left",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.render(tc.res, &tc.status, tc.opts, tc.p); got != tc.want {
				t.Errorf("render =\n  %q\nwant\n  %q", got, tc.want)
			}
		})
	}
}

func TestReportKeepsFirstFailure(t *testing.T) {
	var r report
	a, b := pod("ns", "a"), pod("ns", "b")
	r.failure(&a, taskResult{out: outEvicted})
	r.failure(&a, taskResult{out: outFailed, err: errors.New("first")})
	r.failure(&b, taskResult{out: outFailed, err: errors.New("second")})
	if r.firstErr != "ns/a: first" {
		t.Errorf("firstErr = %q, want the first failure with its pod", r.firstErr)
	}
}
