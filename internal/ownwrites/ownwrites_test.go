package ownwrites

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// A cache that shows a version our own writes replaced is behind; one
// that shows our last write, or a newer one of someone else, is not, and
// ends the record. The version our removal of the finalizer left is
// current: another controller's finalizer may hold the Machine there.
func TestRecord(t *testing.T) {
	var o Record
	k := types.NamespacedName{Namespace: "ns", Name: "m"}
	o.Wrote(k, "u", []string{"1", "2"}, "3", false) // an object patch, then a status patch
	for _, v := range []string{"1", "2"} {
		if !o.Behind(k, "u", v) {
			t.Errorf("version %s, replaced by our writes: not behind", v)
		}
	}
	if o.Behind(k, "u", "3") {
		t.Error("version 3, our last write: behind")
	}
	if o.Behind(k, "u", "1") {
		t.Error("version 1 after the cache showed our last write: behind (the record should have ended)")
	}
	o.Wrote(k, "u", []string{"3"}, "4", false)
	if o.Behind(k, "u", "7") || o.Behind(k, "u", "3") {
		t.Error("after someone else's write the record should have ended")
	}
	o.Wrote(k, "u", nil, "9", false)
	if o.Behind(k, "u", "9") {
		t.Error("a reconcile that wrote nothing left a record")
	}

	o.Wrote(k, "u", []string{"9", "10"}, "11", false) // the finalizer's removal
	for _, v := range []string{"9", "10"} {
		if !o.Behind(k, "u", v) {
			t.Errorf("version %s, before the removal of our finalizer: not behind", v)
		}
	}
	if o.Behind(k, "other", "11") {
		t.Error("a new Machine of the same name: behind")
	}
	o.Wrote(k, "u", []string{"9", "10"}, "11", false)
	if o.Behind(k, "u", "11") {
		t.Error("version 11, which removed our finalizer and which another controller's finalizer holds: behind (it would be requeued until that finalizer goes)")
	}
	o.Wrote(k, "v", nil, "12", false) // another controller's finalizer holds it: we wrote nothing
	if o.Behind(k, "v", "12") {
		t.Error("a Machine without our finalizer, which we did not write: behind")
	}
	o.Wrote(k, "u", []string{"9"}, "10", false)
	o.Forget(k)
	if o.Behind(k, "u", "9") {
		t.Error("behind after forget")
	}
}
