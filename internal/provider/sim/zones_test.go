package sim

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// A Machine's spec.failureDomain places its VM; a zone the class does not
// list is refused, naming the field.
func TestCreateHonoursFailureDomain(t *testing.T) {
	s, _ := newTestSim(t, Options{})
	mc := class("small", basicSpec)
	for _, name := range []string{"m1", "m2", "m3"} {
		m := machine(name, "small")
		m.Spec.FailureDomain = "local-b"
		resp := mustCreate(t, s, m, mc)
		if !strings.Contains(resp.ProviderID, "/local-b/") {
			t.Fatalf("%s placed in %s, want local-b", name, resp.ProviderID)
		}
	}
	m := machine("m4", "small")
	m.Spec.FailureDomain = "local-z"
	_, err := create(s, m, mc)
	wantCode(t, "create in an unknown zone", err, driver.InvalidArgument)
	if !strings.Contains(err.Error(), "spec.failureDomain") || !strings.Contains(err.Error(), "local-z") {
		t.Errorf("error %v does not name spec.failureDomain and the zone", err)
	}
}

// The admin API makes a zone out of capacity and back at runtime: creates
// placed there are refused with ResourceExhausted meanwhile, the others
// go through, and the switch survives a restart from the snapshot.
func TestAdminZoneCapacity(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sim.json")
	s, _ := newTestSim(t, Options{SnapshotPath: path})
	srv := httptest.NewServer(s.AdminHandler())
	t.Cleanup(srv.Close)
	mc := class("small", basicSpec)
	inZone := func(name, zone string) error {
		m := machine(name, "small")
		m.Spec.FailureDomain = zone
		_, err := create(s, m, mc)
		return err
	}

	var zones ZonesOutOfCapacity
	adminCall(t, srv, "POST", "/zones/local-b/out-of-capacity", "", http.StatusOK, &zones)
	if !reflect.DeepEqual(zones.Zones, []string{"local-b"}) {
		t.Fatalf("zones out of capacity %v", zones.Zones)
	}
	wantCode(t, "create in the full zone", inZone("m1", "local-b"), driver.ResourceExhausted)
	if err := inZone("m2", "local-a"); err != nil {
		t.Fatalf("create in the other zone: %v", err)
	}

	if err := s.Save(); err != nil {
		t.Fatal(err)
	}
	b, _ := newTestSim(t, Options{SnapshotPath: path})
	if got := b.Cloud().OutOfCapacityZones(); !reflect.DeepEqual(got, []string{"local-b"}) {
		t.Fatalf("after a restart the zones out of capacity are %v", got)
	}

	adminCall(t, srv, "POST", "/zones/local-b/capacity", "", http.StatusOK, &zones)
	adminCall(t, srv, "GET", "/zones/out-of-capacity", "", http.StatusOK, &zones)
	if len(zones.Zones) != 0 {
		t.Fatalf("zones out of capacity after giving it back: %v", zones.Zones)
	}
	if err := inZone("m1", "local-b"); err != nil {
		t.Fatalf("create once the zone is back: %v", err)
	}
}
