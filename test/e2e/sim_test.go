package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/millwright-dev/millwright/internal/provider/sim"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// The sim's admin API (internal/provider/sim/admin.go), for the scenario's
// namespace.

// vms lists the scenario's VMs: in the sim, or libvirt's domains made for
// the scenario's Machines.
func (s *scenario) vms() ([]sim.VM, error) {
	if s.vm != nil {
		return s.vm.vms()
	}
	if s.aws != nil {
		return s.aws.vms(s.ns)
	}
	var out []sim.VM
	return out, s.simGet("/vms?namespace="+s.ns, &out)
}

// history lists every VM ever created for the scenario, deleted ones too.
func (s *scenario) history() ([]sim.HistoryEntry, error) {
	var out []sim.HistoryEntry
	return out, s.simGet("/history?namespace="+s.ns, &out)
}

func (s *scenario) simGet(path string, out any) error {
	code, body, err := testenv.HTTPGet("http://" + s.simAdmin + path)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", path, code, body)
	}
	return json.Unmarshal([]byte(body), out)
}

// simPost posts body (JSON-encoded unless nil) to the admin API, decodes
// the answer into out (unless nil) and fails the test on any error.
func (s *scenario) simPost(path string, body, out any) {
	s.t.Helper()
	var in io.Reader = http.NoBody
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		in = bytes.NewReader(data)
	}
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Post("http://"+s.simAdmin+path, "application/json", in)
	if err != nil {
		s.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		s.t.Fatalf("POST %s: %d %s", path, resp.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			s.t.Fatalf("POST %s: %v", path, err)
		}
	}
}

// killVM stops a VM behind Millwright's back: its Node goes NotReady.
func (s *scenario) killVM(id string) {
	s.t.Helper()
	s.simPost("/vms/"+id+"/kill", nil, nil)
}

// createOrphan makes a VM of class that no Machine asked for.
func (s *scenario) createOrphan(class string) sim.VM {
	s.t.Helper()
	var vm sim.VM
	s.simPost("/orphans", sim.OrphanRequest{Namespace: s.ns, ClassName: class}, &vm)
	s.extraNodes = append(s.extraNodes, vm.NodeName)
	return vm
}

// checkNoDuplicateVMs fails the test if any Machine ever had more than one
// VM (orphans made on purpose aside): creating a VM twice for one Machine
// is the worst bug the project can have.
func (s *scenario) checkNoDuplicateVMs() []sim.HistoryEntry {
	s.t.Helper()
	hist, err := s.history()
	if err != nil {
		s.t.Fatalf("reading the sim's history: %v", err)
	}
	byMachine := map[string][]sim.HistoryEntry{}
	for _, h := range hist {
		if !h.Orphan {
			byMachine[h.MachineName] = append(byMachine[h.MachineName], h)
		}
	}
	for name, hs := range byMachine {
		if len(hs) > 1 {
			s.t.Errorf("Machine %s had %d VMs: %+v", name, len(hs), hs)
		}
	}
	return hist
}

// simVM is a VM as the admin API describes it.
type simVM = sim.VM
