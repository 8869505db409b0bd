package relay

import "testing"

// A VM's relays hold at most max slots at once; a released slot is taken
// again, and another VM's slots are its own.
func TestTakeSlotCapsAVMsConnections(t *testing.T) {
	const max = 3
	vm := "mw-test-" + t.Name()
	var releases []func()
	for i := range max {
		release, ok := TakeSlot(vm, max)
		if !ok {
			t.Fatalf("slot %d of %d refused", i+1, max)
		}
		releases = append(releases, release)
	}
	if _, ok := TakeSlot(vm, max); ok {
		t.Fatalf("a relay took slot %d of a VM allowed %d", max+1, max)
	}
	if release, ok := TakeSlot(vm+"-other", max); !ok {
		t.Fatal("another VM's relay was refused a slot")
	} else {
		release()
	}
	releases[1]()
	release, ok := TakeSlot(vm, max)
	if !ok {
		t.Fatal("a released slot was not taken again")
	}
	release()
	for _, r := range append(releases[:1], releases[2:]...) {
		r()
	}
}
