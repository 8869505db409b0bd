package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// snapshotVersion is the format of the snapshot file; a file of another
// version is refused rather than misread.
const snapshotVersion = 1

// Snapshot is the cloud's whole state as saved to the snapshot file.
type Snapshot struct {
	Version   int                    `json:"version"`
	SavedAt   time.Time              `json:"savedAt"`
	VMs       []VM                   `json:"vms"`
	History   []HistoryEntry         `json:"history"`
	Counters  map[string]int         `json:"counters,omitempty"`
	Classes   map[string]ClassRecord `json:"classes,omitempty"`
	Outage    bool                   `json:"outage,omitempty"`
	OrphanSeq int                    `json:"orphanSeq,omitempty"`
	// OutOfCapacityZones are the zones the admin API made out of capacity.
	OutOfCapacityZones []string `json:"outOfCapacityZones,omitempty"`
}

// Snapshot returns a copy of the cloud's state.
func (c *Cloud) Snapshot() Snapshot {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s := Snapshot{
		Version:   snapshotVersion,
		SavedAt:   c.clock.Now(),
		VMs:       make([]VM, 0, len(c.vms)),
		History:   make([]HistoryEntry, len(c.history)),
		Counters:  make(map[string]int, len(c.counters)),
		Classes:   make(map[string]ClassRecord, len(c.classes)),
		Outage:    c.outage,
		OrphanSeq: c.orphanSeq,
	}
	for z := range c.fullZones {
		s.OutOfCapacityZones = append(s.OutOfCapacityZones, z)
	}
	sort.Strings(s.OutOfCapacityZones)
	for _, vm := range c.vms {
		s.VMs = append(s.VMs, vm.clone())
	}
	c.sortVMsLocked(s.VMs)
	for i := range c.history {
		s.History[i] = c.history[i].clone()
	}
	for k, v := range c.counters {
		s.Counters[k] = v
	}
	for k, v := range c.classes {
		s.Classes[k] = v
	}
	return s
}

// restore replaces the cloud's state with a snapshot's.
func (c *Cloud) restore(s Snapshot) error {
	if s.Version != snapshotVersion {
		return fmt.Errorf("snapshot version %d, this sim reads version %d", s.Version, snapshotVersion)
	}
	fresh := newCloud(c.clock)
	for i, h := range s.History {
		if h.ID == "" {
			return fmt.Errorf("history[%d] has no VM ID", i)
		}
		fresh.history = append(fresh.history, h)
		fresh.historyAt[h.ID] = i
	}
	vms := append([]VM(nil), s.VMs...)
	for i := range vms {
		if _, known := fresh.historyAt[vms[i].ID]; !known {
			return fmt.Errorf("vms[%d]: VM %s is missing from the history", i, vms[i].ID)
		}
	}
	// VMs claiming one Machine are kept oldest first.
	fresh.sortVMsLocked(vms)
	for i := range vms {
		vm := vms[i]
		if vm.ID == "" || vm.NodeName == "" {
			return fmt.Errorf("vms[%d] has no ID or node name", i)
		}
		if _, dup := fresh.vms[vm.ID]; dup {
			return fmt.Errorf("vms[%d]: VM %s is listed twice", i, vm.ID)
		}
		fresh.addLocked(&vm)
	}
	for k, v := range s.Counters {
		fresh.counters[k] = v
	}
	for k, v := range s.Classes {
		fresh.classes[k] = v
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.vms, c.byMachine, c.byNode, c.byClass = fresh.vms, fresh.byMachine, fresh.byNode, fresh.byClass
	c.zoneLoad, c.ips, c.history, c.historyAt = fresh.zoneLoad, fresh.ips, fresh.history, fresh.historyAt
	c.counters, c.classes, c.outage, c.orphanSeq = fresh.counters, fresh.classes, s.Outage, s.OrphanSeq
	c.fullZones = map[string]bool{}
	for _, z := range s.OutOfCapacityZones {
		c.fullZones[z] = true
	}
	return nil
}

// snapshotter saves the cloud to a file when it changed, at most once per
// interval, so that a burst of thousands of creates costs a few writes.
//
// Creates and deletes do not wait for it: they call durable, which saves
// before the call answers, so a sim killed right after telling Millwright
// a VM exists (or is gone) still knows it when it starts again.
type snapshotter struct {
	path     string
	interval time.Duration
	clock    clock.WithTicker
	cloud    *Cloud
	log      *slog.Logger
	dirtyCh  chan struct{}
	saveMu   sync.Mutex

	// Group commit for durable: requested counts the changes callers asked
	// to be saved, saved the last such count a finished save covers.
	commitMu  sync.Mutex
	committed *sync.Cond
	requested uint64
	saved     uint64
	saving    bool
}

func newSnapshotter(path string, interval time.Duration, clk clock.WithTicker, cloud *Cloud, log *slog.Logger) *snapshotter {
	s := &snapshotter{path: path, interval: interval, clock: clk, cloud: cloud, log: log, dirtyCh: make(chan struct{}, 1)}
	s.committed = sync.NewCond(&s.commitMu)
	return s
}

// durable returns once a snapshot taken after the caller's change is on
// disk. Concurrent callers share saves: while one save runs, the callers
// arriving meanwhile wait for the next one, which covers them all, so a
// burst of creates costs a few writes rather than one each.
func (s *snapshotter) durable() error {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	s.requested++
	want := s.requested
	for s.saved < want {
		if s.saving {
			s.committed.Wait()
			continue
		}
		s.saving = true
		covers := s.requested // every change counted so far is in the cloud already
		s.commitMu.Unlock()
		err := s.save()
		s.commitMu.Lock()
		s.saving = false
		if err == nil && covers > s.saved {
			s.saved = covers
		}
		s.committed.Broadcast()
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *snapshotter) markDirty() {
	select {
	case s.dirtyCh <- struct{}{}:
	default:
	}
}

func (s *snapshotter) load() error {
	data, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sim: reading snapshot: %w", err)
	}
	var snap Snapshot
	if err := json.Unmarshal(data, &snap); err != nil {
		return fmt.Errorf("sim: snapshot %s is not valid JSON: %w", s.path, err)
	}
	if err := s.cloud.restore(snap); err != nil {
		return fmt.Errorf("sim: snapshot %s: %w", s.path, err)
	}
	return nil
}

func (s *snapshotter) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.dirtyCh:
		}
		if err := s.save(); err != nil {
			s.log.Error("saving snapshot", "path", s.path, "error", err)
		}
		t := s.clock.NewTimer(s.interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// save writes the snapshot to a temporary file and renames it over the
// old one, so a crash mid-write never leaves a torn file.
func (s *snapshotter) save() error {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	data, err := json.Marshal(s.cloud.Snapshot())
	if err != nil {
		return fmt.Errorf("sim: encoding snapshot: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), filepath.Base(s.path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("sim: writing snapshot: %w", err)
	}
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("sim: writing snapshot: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("sim: writing snapshot: %w", err)
	}
	// The rename is durable once the directory is synced.
	dir, err := os.Open(filepath.Dir(s.path))
	if err != nil {
		return fmt.Errorf("sim: syncing snapshot directory: %w", err)
	}
	serr = dir.Sync()
	if err := errors.Join(serr, dir.Close()); err != nil {
		return fmt.Errorf("sim: syncing snapshot directory: %w", err)
	}
	return nil
}
