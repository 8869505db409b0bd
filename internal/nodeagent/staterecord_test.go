package nodeagent

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// The slots' offsets, as docs/providers/libvirt.md gives them.
const slot0, slot1 = 0, 512 << 10

func readDevice(t *testing.T, dev string) []byte {
	t.Helper()
	data, err := os.ReadFile(dev)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// deviceWith writes data as a new device and returns its path.
func deviceWith(t *testing.T, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustWrite(t *testing.T, dev string, s *State) {
	t.Helper()
	if err := WriteState(dev, s); err != nil {
		t.Fatal(err)
	}
}

func wantState(t *testing.T, dev string, want *State, what string) {
	t.Helper()
	if got, err := ReadState(dev); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: ReadState = %+v, %v; want %+v", what, got, err, want)
	}
}

// v2Record is a record as the documentation describes it, built here
// rather than by the agent's encoder.
func v2Record(t *testing.T, gen uint64, s *State) []byte {
	t.Helper()
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	rec := append([]byte("MWSTATE\x02"), binary.BigEndian.AppendUint64(nil, gen)...)
	rec = binary.BigEndian.AppendUint32(rec, uint32(len(data)))
	rec = append(rec, data...)
	return binary.BigEndian.AppendUint32(rec, crc32.ChecksumIEEE(rec[8:]))
}

// v1Record is the one record agents before the two slots wrote at offset 0.
func v1Record(t *testing.T, s *State) []byte {
	t.Helper()
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	rec := binary.BigEndian.AppendUint32([]byte("MWSTATE\x01"), uint32(len(data)))
	rec = append(rec, data...)
	return binary.BigEndian.AppendUint32(rec, crc32.ChecksumIEEE(data))
}

func TestStateRecord(t *testing.T) {
	dev := stateDevice(t)
	if s, err := ReadState(dev); s != nil || err != nil {
		t.Fatalf("a zeroed device holds %+v, %v; want no state", s, err)
	}
	first := &State{NodeName: "m-1", Certificate: []byte("cert\n"), Key: []byte("key\n"), Version: "v1.35.2"}
	mustWrite(t, dev, first)
	wantState(t, dev, first, "after the first write")
	data := readDevice(t, dev)
	if rec := v2Record(t, 1, first); !bytes.Equal(data[slot0:slot0+len(rec)], rec) {
		t.Fatalf("the first write is not generation 1 in slot 0: % x", data[:32])
	}
	// A shorter record: the length says where it ends.
	second := &State{NodeName: "m-1", Version: "v1.36.0"}
	mustWrite(t, dev, second)
	wantState(t, dev, second, "after a second write")
	data = readDevice(t, dev)
	if rec := v2Record(t, 2, second); !bytes.Equal(data[slot1:slot1+len(rec)], rec) {
		t.Fatalf("the second write is not generation 2 in slot 1: % x", data[slot1:slot1+32])
	}
	if rec := v2Record(t, 1, first); !bytes.Equal(data[slot0:slot0+len(rec)], rec) {
		t.Fatal("the second write touched slot 0")
	}
	if fi, err := os.Stat(dev); err != nil || fi.Size() != 1<<20 {
		t.Errorf("the device's size changed: %v, %v", fi.Size(), err)
	}
	// A third write goes back to slot 0, leaving the newest in slot 1.
	third := &State{NodeName: "m-1", Version: "v1.36.1"}
	mustWrite(t, dev, third)
	wantState(t, dev, third, "after a third write")
	if after := readDevice(t, dev); !bytes.Equal(after[slot1:], data[slot1:]) {
		t.Error("the third write touched slot 1, which held the newest record")
	}

	// WriteState creates nothing: the device is the provider's.
	if err := WriteState(filepath.Join(t.TempDir(), "missing"), first); err == nil {
		t.Error("WriteState created a missing device")
	}
	// Nor does it grow a device too small for two slots.
	small := deviceWith(t, make([]byte, 4096))
	if err := WriteState(small, first); err == nil || !strings.Contains(err.Error(), "two slots") {
		t.Errorf("WriteState to a 4 KiB device: %v; want an error", err)
	}
}

// TestStateTornWrite cuts the agent's own write short at every length, and
// spoils each of its bytes: the device still reads as the record before
// (or, the write complete, the new one), and the next write works.
func TestStateTornWrite(t *testing.T) {
	older := &State{NodeName: "m-1", Certificate: []byte("cert 1\n"), Key: []byte("key 1\n"), Version: "v1.35.2"}
	prev := &State{NodeName: "m-1", Certificate: []byte("cert 2\n"), Key: []byte("key 2\n"), Version: "v1.35.2"}
	next := &State{NodeName: "m-1", Certificate: []byte("cert 2\n"), Key: []byte("key 2\n"), Version: "v1.36.0"}
	dev := stateDevice(t)
	mustWrite(t, dev, older)
	mustWrite(t, dev, prev)
	before := readDevice(t, dev)
	mustWrite(t, dev, next)
	after := readDevice(t, dev)
	// What the write changed: one range, in the slot not holding prev.
	lo, hi := 0, len(after)
	for lo < hi && before[lo] == after[lo] {
		lo++
	}
	for hi > lo && before[hi-1] == after[hi-1] {
		hi--
	}
	if lo == hi || lo < slot0 || hi > slot1 {
		t.Fatalf("the write changed bytes %d to %d; want a change within slot 0 [0, %d)", lo, hi, slot1)
	}
	torn := make([]byte, len(before))
	for cut := lo; cut < hi; cut++ {
		copy(torn, before)
		copy(torn[lo:cut], after[lo:cut])
		d := deviceWith(t, torn)
		wantState(t, d, prev, "a write cut after "+strconv.Itoa(cut-lo)+" bytes")
		// The agent writes again over the spoilt slot, not over prev.
		mustWrite(t, d, next)
		wantState(t, d, next, "rewritten after a write cut after "+strconv.Itoa(cut-lo)+" bytes")
		if got := readDevice(t, d); !bytes.Equal(got[slot1:], before[slot1:]) {
			t.Fatalf("the write after a torn one (cut after %d bytes) touched the slot of the newest valid record", cut-lo)
		}
	}
	for i := lo; i < hi; i++ {
		copy(torn, after)
		torn[i] ^= 0x10
		wantState(t, deviceWith(t, torn), prev, "the new record with byte "+strconv.Itoa(i)+" spoilt")
	}
	wantState(t, deviceWith(t, after), next, "the write complete")
}

func TestStateNewestOfTwo(t *testing.T) {
	a := &State{NodeName: "m-1", Version: "v1.35.0"}
	b := &State{NodeName: "m-1", Version: "v1.36.0"}
	for _, tc := range []struct {
		gen0, gen1 uint64
		want       *State
	}{{4, 5, b}, {6, 5, a}, {0, 1, b}, {1 << 40, 3, a}} {
		data := make([]byte, 1<<20)
		copy(data[slot0:], v2Record(t, tc.gen0, a))
		copy(data[slot1:], v2Record(t, tc.gen1, b))
		wantState(t, deviceWith(t, data), tc.want, "generations "+strconv.Itoa(int(tc.gen0))+" and "+strconv.Itoa(int(tc.gen1)))
	}
}

// TestStateOldFormat reads a VM's device written before the two slots,
// and writes past it without losing it until the new record is complete.
func TestStateOldFormat(t *testing.T) {
	old := &State{NodeName: "m-1", Certificate: []byte("cert\n"), Key: []byte("key\n"), Version: "v1.35.2"}
	data := make([]byte, 1<<20)
	copy(data, v1Record(t, old))
	dev := deviceWith(t, data)
	wantState(t, dev, old, "a record of the old format")
	next := &State{NodeName: "m-1", Certificate: []byte("cert\n"), Key: []byte("key\n"), Version: "v1.36.0"}
	mustWrite(t, dev, next)
	wantState(t, dev, next, "a new record over an old one")
	after := readDevice(t, dev)
	if !bytes.Equal(after[:slot1], data[:slot1]) {
		t.Error("the first new write overwrote the old record")
	}
	// The new record torn: the old one is read.
	torn := bytes.Clone(after)
	torn[slot1+30] ^= 1
	wantState(t, deviceWith(t, torn), old, "an old record and a torn new one")
	// An old record spoilt, with nothing else, is an error.
	data[14] ^= 1
	if s, err := ReadState(deviceWith(t, data)); s != nil || err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("ReadState of a spoilt old record = %+v, %v; want a checksum error", s, err)
	}
}

// TestStateBothSpoilt: with no valid record but a magic, the agent says
// what is wrong with each slot rather than forgetting who it is.
func TestStateBothSpoilt(t *testing.T) {
	dev := stateDevice(t)
	mustWrite(t, dev, &State{NodeName: "m-1", Version: "v1.35.0"})
	mustWrite(t, dev, &State{NodeName: "m-1", Version: "v1.36.0"})
	data := readDevice(t, dev)
	data[slot0+25] ^= 1
	data[slot1+25] ^= 1
	s, err := ReadState(deviceWith(t, data))
	if s != nil || err == nil {
		t.Fatalf("ReadState with both slots spoilt = %+v, %v; want an error", s, err)
	}
	for _, want := range []string{"no valid state record", "slot 0 (offset 0): the record fails its checksum", "slot 1 (offset 524288): the record fails its checksum"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("ReadState with both slots spoilt: %v; want %q in it", err, want)
		}
	}
	// A length beyond the bound is refused before reading; a slot cut
	// short by the end of the file too.
	copy(data[slot0+16:], []byte{0xff, 0xff, 0xff, 0xff})
	cut := data[:slot1+22]
	if s, err := ReadState(deviceWith(t, cut)); s != nil || err == nil || !strings.Contains(err.Error(), "more than 65536") || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("ReadState of an oversized length and a cut slot = %+v, %v; want both errors", s, err)
	}
}
