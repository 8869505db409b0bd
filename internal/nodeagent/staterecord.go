package nodeagent

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
)

// The state device holds two slots, at offset 0 and at stateSlotSize
// (half the libvirt driver's 1 MiB volume), each either empty (not
// starting with a magic) or one record, all integers big-endian:
//
//	magic v2 (8 bytes) | generation g (uint64) | length n (uint32) | JSON of State (n bytes) | CRC-32 (IEEE) of g, n and the JSON (uint32)
//
// A write goes to the slot that does not hold the newest valid record,
// with the next generation, and is synced: a write torn by a crash or a
// destroyed VM spoils only that slot, and the other still holds the
// previous record. A read takes the valid record of highest generation
// (docs/providers/libvirt.md, "The state volume").
//
// Agents before the two slots wrote one record at offset 0:
//
//	magic v1 (8 bytes) | length n (uint32) | JSON of State (n bytes) | CRC-32 (IEEE) of the JSON (uint32)
//
// which is still read, as generation 0, so that a VM made before keeps its
// credentials; the next write goes to the second slot and leaves it be.
//
// A device with no magic in either slot (a new, zeroed volume) holds no
// state. One with a magic but no valid record is an error: the agent says
// so rather than forgetting who it is.
var (
	stateMagicV1 = [8]byte{'M', 'W', 'S', 'T', 'A', 'T', 'E', 1}
	stateMagic   = [8]byte{'M', 'W', 'S', 'T', 'A', 'T', 'E', 2}
)

const (
	// stateSlotSize is the offset of the second slot and the room each
	// slot has; the device must hold two.
	stateSlotSize = 512 << 10
	// maxStateSize bounds the JSON (a record is about 2 KiB).
	maxStateSize = 64 << 10
	// stateHeaderSize is a v2 record's magic, generation and length.
	stateHeaderSize = 8 + 8 + 4
)

// stateRecord is a valid record read from a slot.
type stateRecord struct {
	slot       int
	generation uint64
	state      State
}

// encodeStateRecord returns the bytes of a v2 record of s.
func encodeStateRecord(generation uint64, s *State) ([]byte, error) {
	data, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	if len(data) > maxStateSize {
		return nil, fmt.Errorf("the state record is %d bytes, more than %d", len(data), maxStateSize)
	}
	rec := make([]byte, 0, stateHeaderSize+len(data)+4)
	rec = append(rec, stateMagic[:]...)
	rec = binary.BigEndian.AppendUint64(rec, generation)
	rec = binary.BigEndian.AppendUint32(rec, uint32(len(data)))
	rec = append(rec, data...)
	return binary.BigEndian.AppendUint32(rec, crc32.ChecksumIEEE(rec[8:])), nil
}

// readStateSlot reads the slot at index slot of f: nil, nil when it is
// empty (no magic, or beyond the end of a file); an error when it has a
// magic but no valid record, or cannot be read.
func readStateSlot(f *os.File, slot int) (*stateRecord, error) {
	buf := make([]byte, stateHeaderSize+maxStateSize+4)
	n, err := f.ReadAt(buf, int64(slot)*stateSlotSize)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	buf = buf[:n]
	if len(buf) < 8 {
		return nil, nil
	}
	var (
		gen  uint64
		body []byte // what the checksum covers
		data []byte // the JSON
		sum  []byte
	)
	switch {
	case bytes.Equal(buf[:8], stateMagic[:]):
		if len(buf) < stateHeaderSize {
			return nil, errors.New("the record is cut short")
		}
		gen = binary.BigEndian.Uint64(buf[8:16])
		size := binary.BigEndian.Uint32(buf[16:20])
		if size > maxStateSize {
			return nil, fmt.Errorf("the record says %d bytes, more than %d", size, maxStateSize)
		}
		end := stateHeaderSize + int(size)
		if len(buf) < end+4 {
			return nil, errors.New("the record is cut short")
		}
		body, data, sum = buf[8:end], buf[stateHeaderSize:end], buf[end:end+4]
	case slot == 0 && bytes.Equal(buf[:8], stateMagicV1[:]):
		if len(buf) < 12 {
			return nil, errors.New("the record is cut short")
		}
		size := binary.BigEndian.Uint32(buf[8:12])
		if size > maxStateSize {
			return nil, fmt.Errorf("the record says %d bytes, more than %d", size, maxStateSize)
		}
		end := 12 + int(size)
		if len(buf) < end+4 {
			return nil, errors.New("the record is cut short")
		}
		body, data, sum = buf[12:end], buf[12:end], buf[end:end+4]
	default:
		return nil, nil
	}
	if crc32.ChecksumIEEE(body) != binary.BigEndian.Uint32(sum) {
		return nil, errors.New("the record fails its checksum")
	}
	r := &stateRecord{slot: slot, generation: gen}
	if err := json.Unmarshal(data, &r.state); err != nil {
		return nil, err
	}
	return r, nil
}

// newestStateRecord returns the valid record of highest generation of f;
// nil without error when neither slot has a magic.
func newestStateRecord(f *os.File) (*stateRecord, error) {
	var (
		newest *stateRecord
		errs   []error
	)
	for slot := range 2 {
		r, err := readStateSlot(f, slot)
		if err != nil {
			errs = append(errs, fmt.Errorf("slot %d (offset %d): %w", slot, slot*stateSlotSize, err))
			continue
		}
		if r != nil && (newest == nil || r.generation > newest.generation) {
			newest = r
		}
	}
	if newest == nil && len(errs) > 0 {
		return nil, fmt.Errorf("no valid state record: %w", errors.Join(errs...))
	}
	return newest, nil
}

// ReadState reads the newest valid state record of the device or file at
// path; nil without error when it holds none.
func ReadState(path string) (*State, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	r, err := newestStateRecord(f)
	if err != nil {
		return nil, fmt.Errorf("reading the state of %s: %w", path, err)
	}
	if r == nil {
		return nil, nil
	}
	return &r.state, nil
}

// WriteState writes s as the newest record of the device or file at path,
// in the slot not holding the current newest one, and syncs it: once it
// returns, a reboot finds s; if it does not return (a crash), a reboot
// finds s or the record before it.
func WriteState(path string, s *State) error {
	// No O_CREATE: the device is the provider's; a missing one is an error.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	// Seeking to the end gives a block device's size too (Stat does not).
	if size, err := f.Seek(0, io.SeekEnd); err != nil {
		return fmt.Errorf("sizing the state device %s: %w", path, err)
	} else if size < 2*stateSlotSize {
		return fmt.Errorf("the state device %s is %d bytes, less than the %d its two slots need", path, size, 2*stateSlotSize)
	}
	// A device with no valid record (new, or both slots spoilt) is
	// written from slot 0 at generation 1.
	slot, gen := 0, uint64(1)
	if cur, err := newestStateRecord(f); err == nil && cur != nil {
		slot, gen = 1-cur.slot, cur.generation+1
	}
	rec, err := encodeStateRecord(gen, s)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(rec, int64(slot)*stateSlotSize); err != nil {
		return fmt.Errorf("writing the state to %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing the state to %s: %w", path, err)
	}
	return f.Close()
}
