package machineset

import "testing"

// Only a read at the very version the last status write was made on is
// behind that write; any other version (the write's own, a newer one)
// may be written from.
func TestStatusVersionsBehind(t *testing.T) {
	var v statusVersions
	if v.behind("ns/a", "5") {
		t.Fatal("behind with no write remembered")
	}
	v.wrote("ns/a", "5")
	for _, tc := range []struct {
		key, version string
		want         bool
	}{{"ns/a", "5", true}, {"ns/a", "6", false}, {"ns/b", "5", false}} {
		if got := v.behind(tc.key, tc.version); got != tc.want {
			t.Errorf("behind(%s, %s) = %v; want %v", tc.key, tc.version, got, tc.want)
		}
	}
	v.forget("ns/a")
	if v.behind("ns/a", "5") {
		t.Fatal("behind after forget")
	}
}
