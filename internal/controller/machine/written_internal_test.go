package machine

import "testing"

// A cache that shows a version our own writes replaced is behind; one
// that shows our last write, or a newer one of someone else, is not, and
// ends the record.
func TestOwnWrites(t *testing.T) {
	var o ownWrites
	o.record("u", []string{"1", "2"}, "3") // an object patch, then a status patch
	for _, v := range []string{"1", "2"} {
		if !o.behind("u", v) {
			t.Errorf("version %s, replaced by our writes: not behind", v)
		}
	}
	if o.behind("u", "3") {
		t.Error("version 3, our last write: behind")
	}
	if o.behind("u", "1") {
		t.Error("version 1 after the cache showed our last write: behind (the record should have ended)")
	}
	o.record("u", []string{"3"}, "4")
	if o.behind("u", "7") || o.behind("u", "3") {
		t.Error("after someone else's write the record should have ended")
	}
	o.record("v", nil, "9")
	if o.behind("v", "9") {
		t.Error("a reconcile that wrote nothing left a record")
	}
}
