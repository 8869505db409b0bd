package aws

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/internal/motoserver"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// emptyDescribe is EC2's answer to a DescribeInstances that finds nothing.
const emptyDescribe = `<?xml version="1.0" encoding="UTF-8"?>
<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>00000000-0000-4000-8000-000000000001</requestId><reservationSet/></DescribeInstancesResponse>`

// TestLostLaunchAnswerMakesOneInstance loses RunInstances' answers after
// moto has launched (as a timeout or a dropped connection does), with the
// proxy honouring client tokens as EC2 does and moto does not:
//   - the SDK's retry of the call carries the same token: one instance;
//   - a call whose every try lost its answer answers Unavailable, and the
//     next create (a driver restarted) finds the instance by its UID tag;
//   - when that lookup misses it (EC2's lists lag behind launches), the
//     next launch carries the same token and gets the same instance.
//
// Each ends with exactly one live instance for the Machine.
func TestLostLaunchAnswerMakesOneInstance(t *testing.T) {
	p := motoserver.NewProxy(t, moto.URL)
	p.HonourClientTokens()
	c := class("lost", validSpec)
	one := func(t *testing.T, m string, providerIDs ...string) {
		t.Helper()
		live := allInstances(t, tagFilter(ClusterTag(clusterOf(t)), clusterTagValue), tagFilter(TagMachineUID, "uid-"+m),
			filter("instance-state-name", liveStates...))
		if len(live) != 1 {
			t.Fatalf("Machine %s has %d live instances; want 1", m, len(live))
		}
		for _, id := range providerIDs {
			if id != providerIDOf(&live[0]) {
				t.Errorf("a create returned %s; the instance is %s", id, providerIDOf(&live[0]))
			}
		}
	}

	t.Run("SDKRetry", func(t *testing.T) {
		p.Clear()
		p.Fail(&motoserver.Fault{Action: "RunInstances", Code: "InternalError", Status: 500, Times: 1, AfterMoto: true})
		resp := create(t, newDriver(t, p.URL), c, machine("lost-retry"))
		one(t, "lost-retry", resp.ProviderID)
	})
	t.Run("NextCreateFindsIt", func(t *testing.T) {
		p.Clear()
		d := newDriver(t, p.URL)
		p.Fail(&motoserver.Fault{Action: "RunInstances", Code: "InternalError", Status: 500, Times: d.opts.RetryMaxAttempts, AfterMoto: true})
		m := machine("lost-restart")
		if _, err := d.CreateMachine(ctxT(t), &driver.CreateMachineRequest{Machine: m, MachineClass: c, Secret: testSecret()}); driver.CodeOf(err) != driver.Unavailable {
			t.Fatalf("every answer lost: %v; want Unavailable", err)
		}
		p.ResetCounts()
		resp := create(t, newDriver(t, p.URL), c, m)
		if p.Calls("RunInstances") != 0 {
			t.Errorf("the next create launched %d times; want 0 (found by tag)", p.Calls("RunInstances"))
		}
		one(t, "lost-restart", resp.ProviderID)
	})
	t.Run("TokenCoversALaggingList", func(t *testing.T) {
		p.Clear()
		d := newDriver(t, p.URL)
		p.Fail(&motoserver.Fault{Action: "RunInstances", Code: "InternalError", Status: 500, Times: d.opts.RetryMaxAttempts, AfterMoto: true})
		m := machine("lost-lagging")
		if _, err := d.CreateMachine(ctxT(t), &driver.CreateMachineRequest{Machine: m, MachineClass: c, Secret: testSecret()}); driver.CodeOf(err) != driver.Unavailable {
			t.Fatalf("every answer lost: %v; want Unavailable", err)
		}
		p.Fail(&motoserver.Fault{Action: "DescribeInstances", Answer: emptyDescribe})
		p.ResetCounts()
		resp := create(t, newDriver(t, p.URL), c, m)
		if p.Calls("RunInstances") != 1 {
			t.Errorf("the next create made %d RunInstances; want 1, answered from its token", p.Calls("RunInstances"))
		}
		p.Clear()
		one(t, "lost-lagging", resp.ProviderID)
	})
}

// TestCreatesOfTwoMachinesOverlap holds each RunInstances at the proxy
// until two are in flight: creates of two Machines (of other names) must
// launch side by side, or the first waits for ever and the test fails at
// its bound. Only Machines of one name wait for each other (Node names).
func TestCreatesOfTwoMachinesOverlap(t *testing.T) {
	p := motoserver.NewProxy(t, moto.URL)
	arrived := make(chan struct{}, 2)
	both := make(chan struct{})
	var once sync.Once
	var alone atomic.Int32 // launches that waited in vain for the other
	p.Before("RunInstances", func() {
		arrived <- struct{}{}
		if len(arrived) == 2 {
			once.Do(func() { close(both) })
		}
		select {
		case <-both:
		case <-time.After(20 * time.Second):
			alone.Add(1)
		}
	})
	d := newDriver(t, p.URL)
	c := class("overlap", validSpec)
	errs := make(chan error, 2)
	for _, name := range []string{"overlap-a", "overlap-b"} {
		go func() {
			_, err := d.CreateMachine(ctxT(t), &driver.CreateMachineRequest{Machine: machine(name), MachineClass: c, Secret: testSecret()})
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if alone.Load() != 0 {
		t.Fatal("the two launches never were in flight together: creates of two Machines are serialized")
	}
}
