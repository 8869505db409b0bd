package spread

import (
	"reflect"
	"testing"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// zones makes a placement: "a", "b:2" (weight 2), "c!" (out of capacity).
func zones(specs ...string) []v1alpha1.PlacementZone {
	var out []v1alpha1.PlacementZone
	for _, s := range specs {
		z := v1alpha1.PlacementZone{Weight: 1}
		if s[len(s)-1] == '!' {
			z.OutOfCapacity, s = true, s[:len(s)-1]
		}
		if len(s) > 2 && s[1] == ':' {
			z.Weight = int32(s[2] - '0')
			s = s[:1]
		}
		z.Name = s
		out = append(out, z)
	}
	return out
}

func TestTargets(t *testing.T) {
	cases := []struct {
		name  string
		zones []v1alpha1.PlacementZone
		total int32
		want  map[string]int32
	}{
		{"even, remainder by zone order", zones("a", "b", "c"), 10, map[string]int32{"a": 4, "b": 3, "c": 3}},
		{"even, two left over", zones("a", "b", "c"), 11, map[string]int32{"a": 4, "b": 4, "c": 3}},
		{"even, fewer than zones", zones("a", "b", "c"), 2, map[string]int32{"a": 1, "b": 1, "c": 0}},
		{"zero", zones("a", "b"), 0, map[string]int32{"a": 0, "b": 0}},
		{"out of capacity gives its share away", zones("a", "b!", "c"), 10, map[string]int32{"a": 5, "b": 0, "c": 5}},
		{"weighted", zones("a:2", "b:1", "c:1"), 10, map[string]int32{"a": 5, "b": 3, "c": 2}},
		// 7×3/6 = 3.5, 7×2/6 = 2.33, 7×1/6 = 1.17: the half goes first.
		{"weighted, largest remainder", zones("a:1", "b:2", "c:3"), 7, map[string]int32{"a": 1, "b": 2, "c": 4}},
		{"weight 0 gets nothing", zones("a", "b:0"), 5, map[string]int32{"a": 5, "b": 0}},
		{"weight 0 while the others are out of capacity", zones("a!", "b:0"), 5, map[string]int32{"a": 0, "b": 5}},
		{"every zone out of capacity: as if none were", zones("a!", "b!"), 5, map[string]int32{"a": 3, "b": 2}},
		{"no zones", nil, 5, map[string]int32{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Targets(tc.zones, tc.total)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Targets = %v, want %v", got, tc.want)
			}
			var sum int32
			for _, v := range got {
				sum += v
			}
			if len(tc.zones) > 0 && sum != tc.total {
				t.Errorf("shares sum to %d, want %d", sum, tc.total)
			}
		})
	}
}

func TestPickZones(t *testing.T) {
	abc := zones("a", "b", "c")
	cases := []struct {
		name           string
		zones          []v1alpha1.PlacementZone
		n              int
		counts, others map[string]int32
		want           []string
	}{
		{"empty: zone order", abc, 4, nil, nil, []string{"a", "b", "c", "a"}},
		{"furthest below its share first", abc, 2, map[string]int32{"a": 3, "b": 1, "c": 2}, nil, []string{"b", "b"}},
		{"a batch counts its own picks", abc, 3, map[string]int32{"a": 3, "b": 1, "c": 1}, nil, []string{"b", "c", "b"}},
		// b and c have the fewest; the old set's Machines are in c: the
		// new one goes there, where the rollout removes next.
		{"tie: where other sets' Machines are", abc, 1, map[string]int32{"a": 4, "b": 3, "c": 3}, map[string]int32{"a": 1, "c": 2}, []string{"c"}},
		{"weighted: exact shares", zones("a:1", "b:2"), 3, map[string]int32{"a": 1, "b": 1}, nil, []string{"b", "b", "a"}},
		{"never out of capacity", zones("a", "b!", "c"), 3, map[string]int32{"a": 1, "c": 1}, nil, []string{"a", "c", "a"}},
		{"never weight 0 while others can", zones("a", "b:0"), 2, map[string]int32{"a": 5}, nil, []string{"a", "a"}},
		{"every zone out of capacity: still placed", zones("a!", "b!"), 1, nil, nil, []string{"a"}},
		{"no zones", nil, 2, nil, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			counts := clone(tc.counts)
			got := PickZones(tc.zones, tc.n, counts, tc.others, Fill{})
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("PickZones = %v, want %v", got, tc.want)
			}
			if !reflect.DeepEqual(counts, clone(tc.counts)) {
				t.Errorf("PickZones changed the caller's counts to %v", counts)
			}
		})
	}
}

func TestVictims(t *testing.T) {
	abc := zones("a", "b", "c")
	cases := []struct {
		name            string
		zones           []v1alpha1.PlacementZone
		n               int
		zoneOf          []string
		class           []int
		counts, staying map[string]int32
		want            []int
	}{
		{"most crowded zone first, counted after each pick", abc, 3,
			[]string{"a", "b", "b", "c", "c", "c"}, []int{0, 0, 0, 0, 0, 0},
			map[string]int32{"a": 2, "b": 3, "c": 4}, nil, []int{3, 4, 1}},
		{"an earlier class goes first whatever its zone", abc, 2,
			[]string{"c", "a", "c"}, []int{0, 1, 1},
			map[string]int32{"a": 2, "c": 4}, nil, []int{0, 2}},
		{"a zone not listed has no share", abc, 1,
			[]string{"a", ""}, []int{0, 0},
			map[string]int32{"a": 3, "b": 3, "c": 3, "": 1}, nil, []int{1}},
		{"out of capacity has no share", zones("a", "b!"), 1,
			[]string{"a", "b"}, []int{0, 0},
			map[string]int32{"a": 3, "b": 1}, nil, []int{1}},
		// a and c are as crowded; the set has two of its Machines in a:
		// it drains a first, leaving one in each.
		{"tie: where the set has the most", abc, 1,
			[]string{"c", "a", "a"}, []int{0, 0, 0},
			map[string]int32{"a": 4, "b": 3, "c": 4}, nil, []int{1}},
		// a and c are as crowded; the newest set has filled c already
		// (3 of its Machines there, 2 in a): the old set removes from a,
		// though it has more Machines left in c.
		{"tie: where the newest set has the fewest", abc, 1,
			[]string{"c", "c", "a"}, []int{0, 0, 0},
			map[string]int32{"a": 4, "b": 3, "c": 4}, map[string]int32{"a": 2, "c": 3}, []int{2}},
		{"tie: the later zone, then the caller's order", abc, 2,
			[]string{"a", "b", "b", "a"}, []int{0, 0, 0, 0},
			map[string]int32{"a": 3, "b": 3, "c": 3}, nil, []int{1, 0}},
		{"more wanted than there are", abc, 5,
			[]string{"a"}, []int{0}, map[string]int32{"a": 1}, nil, []int{0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Victims(tc.zones, tc.n, tc.zoneOf, tc.class, tc.counts, tc.staying); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Victims = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSkew(t *testing.T) {
	targets := map[string]int32{"a": 4, "b": 3, "c": 3}
	for _, tc := range []struct {
		counts map[string]int32
		want   int32
	}{
		{map[string]int32{"a": 4, "b": 3, "c": 3}, 0},
		{map[string]int32{"a": 3, "b": 4, "c": 3}, 1},
		{map[string]int32{"a": 6, "b": 2, "c": 2}, 2},
		{map[string]int32{"a": 4, "b": 3}, 3},
		{map[string]int32{"a": 4, "b": 3, "c": 3, "": 2}, 2},
	} {
		if got := Skew(tc.counts, targets); got != tc.want {
			t.Errorf("Skew(%v) = %d, want %d", tc.counts, got, tc.want)
		}
	}
}

// TestPlacementKeepsSkew grows and shrinks a fleet one Machine at a time
// under several placements and checks each state against Skew.
func TestPlacementKeepsSkew(t *testing.T) {
	for _, zs := range [][]v1alpha1.PlacementZone{zones("a", "b", "c"), zones("a:3", "b:1", "c:2"), zones("a", "b!", "c", "d")} {
		counts := map[string]int32{}
		check := func(total int32) {
			if s := Skew(counts, Targets(zs, total)); s > 1 || !Balanced(zs, counts) {
				t.Fatalf("%v at %d Machines: counts %v, skew %d, balanced %v", zs, total, counts, s, Balanced(zs, counts))
			}
		}
		for total := int32(1); total <= 30; total++ {
			z := PickZones(zs, 1, counts, nil, Fill{})[0]
			counts[z]++
			check(total)
		}
		for total := int32(29); total >= 0; total-- {
			var zoneOf []string
			for _, z := range zs {
				for range counts[z.Name] {
					zoneOf = append(zoneOf, z.Name)
				}
			}
			i := Victims(zs, 1, zoneOf, make([]int, len(zoneOf)), counts, nil)[0]
			counts[zoneOf[i]]--
			check(total)
		}
	}
}

func TestBalanced(t *testing.T) {
	abc := zones("a", "b", "c")
	for _, tc := range []struct {
		zones  []v1alpha1.PlacementZone
		counts map[string]int32
		want   bool
	}{
		{abc, map[string]int32{"a": 3, "b": 4, "c": 3}, true},
		{abc, map[string]int32{"a": 4, "b": 4, "c": 2}, false}, // within 1 of 4/3/3, but 2 apart
		{abc, map[string]int32{"a": 1, "b": 1}, true},
		{abc, map[string]int32{"a": 2}, false},
		{abc, map[string]int32{"a": 1, "b": 1, "": 1}, false},
		{zones("a:2", "b"), map[string]int32{"a": 4, "b": 2}, true},
		{zones("a:2", "b"), map[string]int32{"a": 3, "b": 3}, false},
		{zones("a", "b!"), map[string]int32{"a": 3, "b": 1}, false},
	} {
		if got := Balanced(tc.zones, tc.counts); got != tc.want {
			t.Errorf("Balanced(%v, %v) = %v, want %v", tc.zones, tc.counts, got, tc.want)
		}
	}
}

func TestShort(t *testing.T) {
	abc := zones("a", "b", "c")
	for _, tc := range []struct {
		zones  []v1alpha1.PlacementZone
		counts map[string]int32
		want   string
	}{
		{abc, map[string]int32{"a": 4, "b": 3, "c": 3}, ""},
		{abc, map[string]int32{"a": 3, "b": 1, "c": 2}, "b"},
		{abc, map[string]int32{"a": 4, "b": 4, "c": 2}, "c"},
		{abc, map[string]int32{"a": 4, "b": 0, "c": 0}, "b"},
		{zones("a", "b!", "c"), map[string]int32{"a": 3, "c": 3}, ""},
		{zones("a", "b!", "c"), map[string]int32{"a": 3, "b": 2, "c": 1}, "c"},
		{zones("a:2", "b"), map[string]int32{"a": 4, "b": 2}, ""},
		{zones("a:2", "b"), map[string]int32{"a": 3, "b": 3}, "a"},
		{nil, map[string]int32{"a": 3}, ""},
	} {
		if got := Short(tc.zones, tc.counts); got != tc.want {
			t.Errorf("Short(%v, %v) = %q, want %q", tc.zones, tc.counts, got, tc.want)
		}
	}
}

// A rollout's new set places where its own Machines can still end
// balanced: with 2/3/4 of its own over a final 10 (3.33 each, one zone
// may hold 4), only a can take one, though the old Machines still in a
// make b the least crowded zone now.
func TestPickZonesFill(t *testing.T) {
	abc := zones("a", "b", "c")
	counts := map[string]int32{"a": 4, "b": 3, "c": 4}
	own := map[string]int32{"a": 2, "b": 3, "c": 4}
	if got := PickZones(abc, 1, counts, map[string]int32{"a": 2}, Fill{}); got[0] != "b" {
		t.Fatalf("without a fill PickZones = %v, want b (the least crowded)", got)
	}
	if got := PickZones(abc, 1, counts, map[string]int32{"a": 2}, Fill{Own: own, Final: 10}); got[0] != "a" {
		t.Errorf("PickZones = %v, want a: b or c would leave the new set 2/4/4 or 2/3/5", got)
	}
	// Already unbalanced beyond repair (5 in c): the bound gives way to
	// the usual rule rather than place nothing.
	if got := PickZones(abc, 1, counts, nil, Fill{Own: map[string]int32{"c": 5}, Final: 6}); got[0] != "b" {
		t.Errorf("PickZones = %v, want b", got)
	}
}
