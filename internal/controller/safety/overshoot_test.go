package safety

import "testing"

func TestJudgeOvershoot(t *testing.T) {
	const limit, down = 5, 1 // freeze at 5, unfreeze at 4
	for _, tc := range []struct {
		name                      string
		machines                  int32
		growing, frozen, override bool
		want                      overshootVerdict
	}{
		{"below the limit", 4, true, false, false, overshootVerdict{}},
		{"at the limit", 5, true, false, false, overshootVerdict{freeze: true}},
		{"above the limit", 9, true, false, false, overshootVerdict{freeze: true}},
		{"above the limit, nothing created lately: a scale-down", 9, false, false, false, overshootVerdict{}},
		{"frozen, still above the unfreeze mark", 5, true, true, false, overshootVerdict{}},
		{"frozen, no longer growing: stays frozen", 5, false, true, false, overshootVerdict{}},
		{"frozen, at the unfreeze mark", 4, true, true, false, overshootVerdict{unfreeze: true}},
		{"frozen, far below", 0, false, true, false, overshootVerdict{unfreeze: true}},
		{"override lifts the freeze and holds while high", 7, true, true, true, overshootVerdict{unfreeze: true}},
		{"override holds off a new freeze", 7, true, false, true, overshootVerdict{}},
		{"override dropped once calm", 4, true, false, true, overshootVerdict{dropOverride: true}},
		{"override lifts and is dropped at once when calm", 3, true, true, true, overshootVerdict{unfreeze: true, dropOverride: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := judgeOvershoot(tc.machines, limit, down, tc.growing, tc.frozen, tc.override); got != tc.want {
				t.Fatalf("judgeOvershoot(%d machines, growing %v, frozen %v, override %v) = %+v, want %+v",
					tc.machines, tc.growing, tc.frozen, tc.override, got, tc.want)
			}
		})
	}
}
