package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/pkg/driver"
)

func TestDecodeProviderSpecAcceptsAFullSpec(t *testing.T) {
	raw := `{
	  "region": "local", "zones": ["local-a", "local-b"], "instanceType": "sim.large",
	  "tags": {"team": "infra"}, "bootDelay": "2s", "bootJitter": "1s", "requireInitialization": true, "capacityType": "spot",
	  "faults": {
	    "seed": 42,
	    "create": {"latency": "500ms", "jitter": "250ms", "code": "Unavailable", "count": 2, "afterEffect": true},
	    "initialize": {"code": "Uninitialized", "probability": 0.5, "message": "not yet"},
	    "delete": {"latency": "1s"},
	    "getStatus": {"code": "Internal"},
	    "list": {"code": "Unavailable", "count": 0},
	    "update": {"code": "Aborted", "probability": 1},
	    "bootFailure": {"count": 1},
	    "nodeNotReady": {"after": "30s", "probability": 0.25},
	    "outOfCapacityZones": ["local-b"]
	  }
	}`
	ps, cs, err := parseProviderSpec([]byte(raw))
	if err != nil {
		t.Fatalf("a valid providerSpec was refused: %v", err)
	}
	if ps.Region != "local" || cs.instanceType.Name != "sim.large" || cs.bootDelay != 2*time.Second || !cs.requireInit || cs.capacityType != "spot" {
		t.Errorf("decoded %+v / %+v", ps, cs)
	}
	create := cs.faults.ops[opCreate]
	if create == nil || !create.fail || create.code != driver.Unavailable || create.sel.count != 2 || !create.afterEffect || create.latency != 500*time.Millisecond {
		t.Errorf("create fault decoded as %+v", create)
	}
	if del := cs.faults.ops[opDelete]; del == nil || del.fail || del.latency != time.Second {
		t.Errorf("a latency-only fault decoded as %+v", del)
	}
	if g := cs.faults.ops[opGetStatus]; g == nil || !g.sel.always() {
		t.Errorf("a code without count or probability must fail always: %+v", g)
	}
	if !cs.faults.fullZones["local-b"] || cs.faults.fullZones["local-a"] {
		t.Errorf("full zones: %v", cs.faults.fullZones)
	}
	if cs.faults.notReadyIn != 30*time.Second || cs.faults.notReady.probability != 0.25 {
		t.Errorf("nodeNotReady decoded as %v %+v", cs.faults.notReadyIn, cs.faults.notReady)
	}
}

func TestDecodeProviderSpecDefaults(t *testing.T) {
	_, cs, err := parseProviderSpec([]byte(`{"region":"r","zones":["z"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if cs.instanceType.Name != DefaultInstanceType || cs.requireInit || len(cs.faults.ops) != 0 {
		t.Errorf("defaults: %+v", cs)
	}
}

// Every bad providerSpec is InvalidArgument, and the message starts with
// the path of the offending field.
func TestDecodeProviderSpecRefusesBadInput(t *testing.T) {
	const ok = `"region":"local","zones":["local-a"]`
	for _, tc := range []struct {
		name, spec, wantPrefix string
	}{
		{"empty", ``, "providerSpec: must be set"},
		{"blank", "  \n", "providerSpec: must be set"},
		{"not JSON", `{region: local}`, "providerSpec: is not valid JSON"},
		{"truncated", `{"region":"local"`, "providerSpec: is not valid JSON"},
		{"trailing garbage", `{` + ok + `} x`, "providerSpec: is not valid JSON"},
		{"array", `[]`, "providerSpec: must be an object"},
		{"string", `"local"`, "providerSpec: must be an object"},
		{"null", `null`, "providerSpec.region: must be set"},
		{"no region", `{"zones":["a"]}`, "providerSpec.region: must be set"},
		{"region not a string", `{"region":1,"zones":["a"]}`, "providerSpec.region: must be a string"},
		{"region not a DNS label", `{"region":"Local_1","zones":["a"]}`, "providerSpec.region: \"Local_1\" is not a DNS label"},
		{"unknown field", `{` + ok + `,"size":"big"}`, "providerSpec.size: unknown field; known fields: bootDelay"},
		{"wrong case", `{"Region":"local","zones":["a"]}`, "providerSpec.Region: unknown field"},
		{"duplicate field", `{` + ok + `,"region":"other"}`, "providerSpec.region: duplicate field"},
		{"no zones", `{"region":"local"}`, "providerSpec.zones: must not be empty"},
		{"empty zones", `{"region":"local","zones":[]}`, "providerSpec.zones: must not be empty"},
		{"zones not a list", `{"region":"local","zones":"a"}`, "providerSpec.zones: must be a list"},
		{"zone not a label", `{"region":"local","zones":["a","B b"]}`, "providerSpec.zones[1]: \"B b\" is not a DNS label"},
		{"zone twice", `{"region":"local","zones":["a","b","a"]}`, "providerSpec.zones[2]: zone \"a\" is listed twice"},
		{"unknown instance type", `{` + ok + `,"instanceType":"m5.large"}`, "providerSpec.instanceType: unknown instance type \"m5.large\""},
		{"capacity type unknown", `{` + ok + `,"capacityType":"reserved"}`, "providerSpec.capacityType: \"reserved\" is neither \"spot\" nor \"on-demand\""},
		{"tag key empty", `{` + ok + `,"tags":{"":"x"}}`, "providerSpec.tags: tag key \"\" must be 1 to"},
		{"tag value not a string", `{` + ok + `,"tags":{"a":1}}`, "providerSpec.tags: must be a string"},
		{"tag value too long", `{` + ok + `,"tags":{"a":"` + strings.Repeat("x", 300) + `"}}`, "providerSpec.tags.a: must be at most 256"},
		{"boot delay bad", `{` + ok + `,"bootDelay":"soon"}`, "providerSpec.bootDelay: \"soon\" is not a duration"},
		{"boot delay number", `{` + ok + `,"bootDelay":5}`, "providerSpec.bootDelay: must be a duration string"},
		{"boot jitter negative", `{` + ok + `,"bootJitter":"-1s"}`, "providerSpec.bootJitter: must not be negative"},
		{"boot delay too long", `{` + ok + `,"bootDelay":"2h"}`, "providerSpec.bootDelay: must be at most 1h0m0s"},
		{"faults not an object", `{` + ok + `,"faults":[]}`, "providerSpec.faults: must be an object"},
		{"unknown fault field", `{` + ok + `,"faults":{"create":{"lat":"1s"}}}`, "providerSpec.faults.create.lat: unknown field; known fields: afterEffect, code"},
		{"unknown fault op", `{` + ok + `,"faults":{"reboot":{}}}`, "providerSpec.faults.reboot: unknown field"},
		{"negative latency", `{` + ok + `,"faults":{"create":{"latency":"-1s"}}}`, "providerSpec.faults.create.latency: must not be negative"},
		{"negative jitter", `{` + ok + `,"faults":{"delete":{"jitter":"-5ms"}}}`, "providerSpec.faults.delete.jitter: must not be negative"},
		{"unknown code", `{` + ok + `,"faults":{"create":{"code":"Nope"}}}`, "providerSpec.faults.create.code: \"Nope\" is not a machine error code"},
		{"code OK", `{` + ok + `,"faults":{"list":{"code":"OK"}}}`, "providerSpec.faults.list.code: must not be OK"},
		{"code lower case", `{` + ok + `,"faults":{"list":{"code":"unavailable"}}}`, "providerSpec.faults.list.code: \"unavailable\" is not"},
		{"count without code", `{` + ok + `,"faults":{"update":{"count":1}}}`, "providerSpec.faults.update.code: must be set"},
		{"negative count", `{` + ok + `,"faults":{"create":{"code":"Unknown","count":-1}}}`, "providerSpec.faults.create.count: must be between 0 and"},
		{"fractional count", `{` + ok + `,"faults":{"create":{"code":"Unknown","count":1.5}}}`, "providerSpec.faults.create.count: must be an integer"},
		{"huge count", `{` + ok + `,"faults":{"create":{"code":"Unknown","count":1e30}}}`, "providerSpec.faults.create.count: must be an integer"},
		{"probability above 1", `{` + ok + `,"faults":{"getStatus":{"code":"Unknown","probability":1.5}}}`, "providerSpec.faults.getStatus.probability: must be between 0 and 1"},
		{"probability below 0", `{` + ok + `,"faults":{"getStatus":{"code":"Unknown","probability":-0.1}}}`, "providerSpec.faults.getStatus.probability: must be between 0 and 1"},
		{"probability a string", `{` + ok + `,"faults":{"getStatus":{"code":"Unknown","probability":"0.5"}}}`, "providerSpec.faults.getStatus.probability: must be a number"},
		{"count and probability", `{` + ok + `,"faults":{"create":{"code":"Unknown","count":1,"probability":0.5}}}`, "providerSpec.faults.create: count and probability are mutually exclusive"},
		{"seed not a number", `{` + ok + `,"faults":{"seed":"x"}}`, "providerSpec.faults.seed: must be an integer"},
		{"boot failure probability", `{` + ok + `,"faults":{"bootFailure":{"probability":2}}}`, "providerSpec.faults.bootFailure.probability: must be between 0 and 1"},
		{"boot failure both", `{` + ok + `,"faults":{"bootFailure":{"count":1,"probability":0.1}}}`, "providerSpec.faults.bootFailure: count and probability are mutually exclusive"},
		{"not ready without after", `{` + ok + `,"faults":{"nodeNotReady":{"count":1}}}`, "providerSpec.faults.nodeNotReady.after: must be set"},
		{"not ready negative", `{` + ok + `,"faults":{"nodeNotReady":{"after":"-1m"}}}`, "providerSpec.faults.nodeNotReady.after: must not be negative"},
		{"full zone not listed", `{` + ok + `,"faults":{"outOfCapacityZones":["local-z"]}}`, "providerSpec.faults.outOfCapacityZones[0]: \"local-z\" is not one of providerSpec.zones"},
		{"afterEffect not a bool", `{` + ok + `,"faults":{"create":{"code":"Unknown","afterEffect":"yes"}}}`, "providerSpec.faults.create.afterEffect: must be true or false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := DecodeProviderSpec([]byte(tc.spec))
			if err == nil {
				t.Fatalf("accepted %s as %+v", tc.spec, ps)
			}
			wantCode(t, "DecodeProviderSpec", err, driver.InvalidArgument)
			if msg := driver.MessageOf(err); !strings.HasPrefix(msg, tc.wantPrefix) {
				t.Fatalf("message %q\nwant it to start with %q", msg, tc.wantPrefix)
			}
		})
	}
}

// Every driver method that takes a class refuses a bad providerSpec with
// InvalidArgument before it does anything.
func TestDriverMethodsRefuseBadProviderSpec(t *testing.T) {
	s, _ := newTestSim(t, Options{})
	bad := class("bad", `{"region":"local","zones":["local-a"],"faults":{"create":{"latency":"-1s"}}}`)
	m := machine("m1", "bad")
	ctx := context.Background()
	calls := map[string]func() error{
		"CreateMachine": func() error {
			_, err := s.CreateMachine(ctx, &driver.CreateMachineRequest{Machine: m, MachineClass: bad})
			return err
		},
		"InitializeMachine": func() error {
			_, err := s.InitializeMachine(ctx, &driver.InitializeMachineRequest{Machine: m, MachineClass: bad})
			return err
		},
		"DeleteMachine": func() error {
			_, err := s.DeleteMachine(ctx, &driver.DeleteMachineRequest{Machine: m, MachineClass: bad})
			return err
		},
		"GetMachineStatus": func() error {
			_, err := s.GetMachineStatus(ctx, &driver.GetMachineStatusRequest{Machine: m, MachineClass: bad})
			return err
		},
		"ListMachines": func() error {
			_, err := s.ListMachines(ctx, &driver.ListMachinesRequest{MachineClass: bad})
			return err
		},
		"UpdateMachine": func() error {
			_, err := s.UpdateMachine(ctx, &driver.UpdateMachineRequest{Machine: m, MachineClass: bad})
			return err
		},
	}
	for name, call := range calls {
		err := call()
		wantCode(t, name, err, driver.InvalidArgument)
		if !strings.Contains(driver.MessageOf(err), "providerSpec.faults.create.latency: must not be negative") {
			t.Errorf("%s: message %q does not name the field", name, driver.MessageOf(err))
		}
	}
	if n := len(s.Cloud().History()); n != 0 {
		t.Fatalf("a refused create still made %d VMs", n)
	}
}

// Requests without a Machine or class, or with empty names, are refused.
func TestDriverMethodsRefuseIncompleteRequests(t *testing.T) {
	s, _ := newTestSim(t, Options{})
	ctx := context.Background()
	mc := class("c", basicSpec)
	for _, tc := range []struct {
		name string
		req  *driver.CreateMachineRequest
		want string
	}{
		{"nil request", nil, "request: must be set"},
		{"no machine", &driver.CreateMachineRequest{MachineClass: mc}, "machine: must be set"},
		{"no machine name", &driver.CreateMachineRequest{Machine: machine("", "c"), MachineClass: mc}, "machine.metadata.name: must not be empty"},
		{"no class", &driver.CreateMachineRequest{Machine: machine("m", "c")}, "machineClass: must be set"},
		{"no class name", &driver.CreateMachineRequest{Machine: machine("m", "c"), MachineClass: class("", basicSpec)}, "machineClass.metadata.name: must not be empty"},
	} {
		_, err := s.CreateMachine(ctx, tc.req)
		wantCode(t, tc.name, err, driver.InvalidArgument)
		if !strings.HasPrefix(driver.MessageOf(err), tc.want) {
			t.Errorf("%s: message %q, want prefix %q", tc.name, driver.MessageOf(err), tc.want)
		}
	}
}
