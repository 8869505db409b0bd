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
		name                    string
		zones                   []v1alpha1.PlacementZone
		n                       int
		counts, others, targets map[string]int32
		want                    []string
	}{
		{"empty: largest share first", abc, 4, nil, nil, Targets(abc, 4), []string{"a", "a", "b", "c"}},
		{"largest deficit first", abc, 2, map[string]int32{"a": 3, "b": 1, "c": 2}, nil, Targets(abc, 8),
			[]string{"b", "b"}},
		{"batch counts its own picks", abc, 3, map[string]int32{"a": 3, "b": 1, "c": 1}, nil, Targets(abc, 8),
			[]string{"b", "b", "c"}},
		// b and c both lack one; the old set's Machines are in c: the new
		// one goes there, where a rollout removes next.
		{"tie: where other sets' Machines are", abc, 1, map[string]int32{"a": 4, "b": 3, "c": 3}, map[string]int32{"a": 1, "c": 2},
			map[string]int32{"a": 4, "b": 4, "c": 4}, []string{"c"}},
		{"never out of capacity", zones("a", "b!", "c"), 3, map[string]int32{"a": 1, "c": 1}, nil,
			Targets(zones("a", "b!", "c"), 5), []string{"a", "a", "c"}},
		{"never weight 0 while others can", zones("a", "b:0"), 2, map[string]int32{"a": 5}, nil,
			map[string]int32{"a": 3, "b": 0}, []string{"a", "a"}},
		{"every zone out of capacity: still placed", zones("a!", "b!"), 1, nil, nil, Targets(zones("a!", "b!"), 1), []string{"a"}},
		{"no zones", nil, 2, nil, nil, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			counts := map[string]int32{}
			for z, v := range tc.counts {
				counts[z] = v
			}
			got := PickZones(tc.zones, tc.n, counts, tc.others, tc.targets)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("PickZones = %v, want %v", got, tc.want)
			}
			if !reflect.DeepEqual(counts, tc.counts) && !(len(counts) == 0 && tc.counts == nil) {
				t.Errorf("PickZones changed the caller's counts to %v", counts)
			}
		})
	}
}

func TestVictims(t *testing.T) {
	targets := map[string]int32{"a": 2, "b": 2, "c": 2}
	cases := []struct {
		name   string
		n      int
		zoneOf []string
		class  []int
		counts map[string]int32
		want   []int
	}{
		{"most crowded zone first, counted after each pick", 3,
			[]string{"a", "b", "b", "c", "c", "c"}, []int{0, 0, 0, 0, 0, 0},
			map[string]int32{"a": 2, "b": 3, "c": 4}, []int{3, 1, 4}},
		{"an earlier class goes first whatever its zone", 2,
			[]string{"c", "a", "c"}, []int{0, 1, 1},
			map[string]int32{"a": 2, "c": 4}, []int{0, 2}},
		{"a zone not listed has target 0", 1,
			[]string{"a", ""}, []int{0, 0},
			map[string]int32{"a": 3, "": 1}, []int{0}},
		{"ties by the caller's order", 2,
			[]string{"b", "a"}, []int{0, 0},
			map[string]int32{"a": 3, "b": 3}, []int{0, 1}},
		{"more wanted than there are", 5,
			[]string{"a"}, []int{0}, map[string]int32{"a": 1}, []int{0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Victims(tc.n, tc.zoneOf, tc.class, tc.counts, targets); !reflect.DeepEqual(got, tc.want) {
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
			if s := Skew(counts, Targets(zs, total)); s > 1 {
				t.Fatalf("%v at %d Machines: counts %v, skew %d", zs, total, counts, s)
			}
		}
		for total := int32(1); total <= 30; total++ {
			z := PickZones(zs, 1, counts, nil, Targets(zs, total))[0]
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
			i := Victims(1, zoneOf, make([]int, len(zoneOf)), counts, Targets(zs, total))[0]
			counts[zoneOf[i]]--
			check(total)
		}
	}
}
