package sim

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// adminCall makes one request to the admin API and decodes the JSON answer.
func adminCall(t *testing.T, srv *httptest.Server, method, path, body string, wantStatus int, out any) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != wantStatus {
		t.Fatalf("%s %s: status %d, body %s; want %d", method, path, resp.StatusCode, data, wantStatus)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q", method, path, ct)
	}
	if out != nil {
		reflect.ValueOf(out).Elem().SetZero() // answers omit false and empty fields
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
}

func TestAdminAPI(t *testing.T) {
	s, _ := newTestSim(t, Options{})
	srv := httptest.NewServer(s.AdminHandler())
	t.Cleanup(srv.Close)
	mc := class("small", basicSpec)
	m1 := mustCreate(t, s, machine("m1", "small"), mc)
	mustCreate(t, s, machine("m2", "small"), mc)
	id1 := idFromProviderID(m1.ProviderID)

	var vms []VM
	adminCall(t, srv, "GET", "/vms", "", http.StatusOK, &vms)
	if len(vms) != 2 || vms[0].MachineName != "m1" || vms[1].MachineName != "m2" {
		t.Fatalf("GET /vms: %+v", vms)
	}
	adminCall(t, srv, "GET", "/vms?machine=m2", "", http.StatusOK, &vms)
	if len(vms) != 1 || vms[0].MachineName != "m2" {
		t.Fatalf("GET /vms?machine=m2: %+v", vms)
	}
	adminCall(t, srv, "GET", "/vms?class=nope", "", http.StatusOK, &vms)
	if len(vms) != 0 {
		t.Fatalf("GET /vms?class=nope: %+v", vms)
	}

	var vm VM
	adminCall(t, srv, "GET", "/vms/"+id1, "", http.StatusOK, &vm)
	if vm.ProviderID != m1.ProviderID {
		t.Fatalf("GET /vms/%s: %+v", id1, vm)
	}
	var aerr AdminError
	adminCall(t, srv, "GET", "/vms/vm-nope", "", http.StatusNotFound, &aerr)
	if !strings.Contains(aerr.Error, "vm-nope") {
		t.Errorf("error %+v", aerr)
	}

	adminCall(t, srv, "POST", "/vms/"+id1+"/kill", "", http.StatusOK, &vm)
	if vm.State != VMStopped {
		t.Fatalf("kill: %+v", vm)
	}
	if got, _ := s.Cloud().VM(id1); got.State != VMStopped {
		t.Fatalf("the cloud's VM after kill: %+v", got)
	}
	adminCall(t, srv, "POST", "/vms/vm-nope/kill", "", http.StatusNotFound, &aerr)
	if aerr.Code != "NotFound" {
		t.Errorf("error %+v", aerr)
	}

	adminCall(t, srv, "POST", "/nodes/m2/not-ready", "", http.StatusOK, &vm)
	if !vm.NodeNotReady {
		t.Fatalf("not-ready: %+v", vm)
	}
	adminCall(t, srv, "POST", "/nodes/m2/ready", "", http.StatusOK, &vm)
	if vm.NodeNotReady {
		t.Fatalf("ready: %+v", vm)
	}
	adminCall(t, srv, "POST", "/nodes/nope/not-ready", "", http.StatusNotFound, nil)

	// Orphans: of a class the sim has seen, of one it has not, and bad bodies.
	adminCall(t, srv, "POST", "/orphans", `{"namespace":"default","className":"small"}`, http.StatusCreated, &vm)
	if !vm.Orphan || !strings.HasPrefix(vm.MachineName, "orphan-") || vm.ClassName != "small" || vm.Region != "local" {
		t.Fatalf("orphan: %+v", vm)
	}
	list, err := s.ListMachines(t.Context(), &driver.ListMachinesRequest{MachineClass: mc})
	if err != nil || list.MachineNames()[vm.ProviderID] != vm.MachineName {
		t.Fatalf("ListMachines does not show the orphan: %v, %v", list, err)
	}
	adminCall(t, srv, "POST", "/orphans", `{"namespace":"default","className":"unseen"}`, http.StatusNotFound, &aerr)
	adminCall(t, srv, "POST", "/orphans", `{"namespace":"default","className":"unseen","machineName":"ghost","providerSpec":{"region":"r","zones":["z"]}}`, http.StatusCreated, &vm)
	if vm.MachineName != "ghost" || vm.Zone != "z" {
		t.Fatalf("orphan with providerSpec: %+v", vm)
	}
	adminCall(t, srv, "POST", "/orphans", `{"namespace":"default","className":"x","providerSpec":{"region":"r"}}`, http.StatusBadRequest, &aerr)
	if !strings.Contains(aerr.Error, "providerSpec.zones") || aerr.Code != "InvalidArgument" {
		t.Errorf("error %+v", aerr)
	}
	adminCall(t, srv, "POST", "/orphans", `{"namespace":"default","class":"small"}`, http.StatusBadRequest, &aerr)
	adminCall(t, srv, "POST", "/orphans", `{"className":"small"}`, http.StatusBadRequest, nil)

	// Delete behind Millwright's back: the Machine's VM is NotFound.
	var h HistoryEntry
	adminCall(t, srv, "DELETE", "/vms/"+id1, "", http.StatusOK, &h)
	if h.ID != id1 || h.DeletedAt == nil {
		t.Fatalf("delete: %+v", h)
	}
	_, err = status(s, machine("m1", "small"), mc)
	wantCode(t, "status of a VM deleted through the admin API", err, driver.NotFound)

	var hist []HistoryEntry
	adminCall(t, srv, "GET", "/history", "", http.StatusOK, &hist)
	if len(hist) != 4 || hist[0].ID != id1 || hist[0].DeletedAt == nil || !hist[2].Orphan {
		t.Fatalf("history %+v", hist)
	}
	adminCall(t, srv, "GET", "/history?machine=m1", "", http.StatusOK, &hist)
	if len(hist) != 1 {
		t.Fatalf("history of m1 %+v", hist)
	}

	// Outage: by body and by query.
	var o Outage
	adminCall(t, srv, "GET", "/outage", "", http.StatusOK, &o)
	if o.Outage {
		t.Fatal("outage on at start")
	}
	adminCall(t, srv, "POST", "/outage", `{"outage":true}`, http.StatusOK, &o)
	if !o.Outage || !s.Cloud().Outage() {
		t.Fatal("outage not switched on")
	}
	_, err = create(s, machine("m3", "small"), mc)
	wantCode(t, "create during the outage", err, driver.Unavailable)
	adminCall(t, srv, "POST", "/outage?on=false", "", http.StatusOK, &o)
	if o.Outage || s.Cloud().Outage() {
		t.Fatal("outage not switched off")
	}
	adminCall(t, srv, "POST", "/outage?on=maybe", "", http.StatusBadRequest, nil)
	adminCall(t, srv, "POST", "/outage", `{"outage":"yes"}`, http.StatusBadRequest, nil)

	adminCall(t, srv, "GET", "/nope", "", http.StatusNotFound, &aerr)
	if !strings.Contains(aerr.Error, "/nope") {
		t.Errorf("error %+v", aerr)
	}
	adminCall(t, srv, "PUT", "/vms", "", http.StatusNotFound, &aerr)
	if !strings.Contains(aerr.Error, "PUT /vms") {
		t.Errorf("error %+v", aerr)
	}
}
