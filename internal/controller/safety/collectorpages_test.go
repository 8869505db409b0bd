package safety_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/safety"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// A pass lists a class's VMs a page at a time: the orphans on every page
// are collected, not those of the first page only.
func TestOrphansOnEveryPageAreCollected(t *testing.T) {
	defer safety.SetListPageSize(2)()
	w := newWorld(t, setup{cfg: testConfig()})
	w.Class("c", controllertest.SimSpec)
	w.waitPasses(1)
	var ids []string
	for range 5 {
		ids = append(ids, w.orphan("c", controllertest.SimSpec, "").ID)
	}
	w.pass()
	w.pass()
	for _, id := range ids {
		if w.vmExists(id) {
			t.Errorf("orphan VM %s (of 5, pages of 2) survived two passes", id)
		}
	}
}

// A VM listed after the Machines were first read is judged again against
// them as they are after the last page: the VM of a Machine made during
// the listing is not suspected.
func TestAMachineMadeDuringTheListingIsNotSuspected(t *testing.T) {
	defer safety.SetListPageSize(1)()
	var w *world
	var once sync.Once
	made := func() { // the second page's call makes the Machine "late"
		w.Machine("late", "c", nil)
		w.Eventually(10*time.Second, "the collector's cache to show Machine late", func() (bool, error) {
			err := w.safety.Orphans().Client.Get(context.Background(), types.NamespacedName{Namespace: w.NS, Name: w.Prefix + "late"}, &v1alpha1.Machine{})
			return err == nil, nil
		})
	}
	w = newWorld(t, setup{cfg: testConfig(), wrap: func(d driver.Driver) driver.Driver {
		return pagesDriver{Driver: d, onPage: func(req *driver.ListMachinesRequest) {
			if req.PageToken != "" {
				once.Do(made)
			}
		}}
	}})
	w.Class("c", controllertest.SimSpec)
	w.waitPasses(1)
	w.Machine("live", "c", nil)
	w.WaitPhase("live", v1alpha1.PhaseRunning, 30*time.Second)
	w.orphan("c", controllertest.SimSpec, w.Prefix+"late") // claims a Machine not made yet

	before := safety.OrphansFound("sim")
	w.pass()
	if got := safety.OrphansFound("sim") - before; got != 0 {
		t.Errorf("%g orphan VMs found by the pass during which the Machine they claim was made; want none", got)
	}
}

// pagesDriver calls onPage before it answers each ListMachines call.
type pagesDriver struct {
	driver.Driver
	onPage func(*driver.ListMachinesRequest)
}

func (d pagesDriver) ListMachines(ctx context.Context, req *driver.ListMachinesRequest) (*driver.ListMachinesResponse, error) {
	d.onPage(req)
	return d.Driver.ListMachines(ctx, req)
}
