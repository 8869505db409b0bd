package driver_test

import (
	"context"
	"testing"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// A VM's console is bytes, not text: a driver that quotes it (libvirt's
// progress, the console tail in a stopped VM's error) may hand the wire
// invalid UTF-8, which protobuf refuses to marshal in a string field. The
// call must still carry its answer and code, with the bad bytes replaced,
// never turn into Internal (a terminal failure of the Machine).
func TestInvalidUTF8FromTheDriverIsReplaced(t *testing.T) {
	path := socketPath(t)
	f := newFake("fake")
	servePlugin(t, path, f)
	c := dial(t, path)
	const console = "boot: \xff\xfe ok"
	const clean = "boot: \uFFFD ok"

	f.setResponse(driver.MethodGetMachineStatus, &driver.GetMachineStatusResponse{ProviderID: "p", Progress: console})
	resp, err := c.GetMachineStatus(context.Background(), &driver.GetMachineStatusRequest{Machine: testMachine("m"), MachineClass: testClass()})
	if err != nil || resp.Progress != clean {
		t.Fatalf("GetMachineStatus with a console of invalid UTF-8: %+v, %v; want progress %q", resp, err, clean)
	}

	f.setHandle(func(context.Context, driver.Method, any) (any, error) {
		return nil, driver.Errorf(driver.FailedPrecondition, "the VM stopped; its console: %s", console)
	})
	_, err = c.GetMachineStatus(context.Background(), &driver.GetMachineStatusRequest{Machine: testMachine("m"), MachineClass: testClass()})
	if driver.CodeOf(err) != driver.FailedPrecondition || driver.MessageOf(err) != "the VM stopped; its console: "+clean {
		t.Fatalf("an error quoting a console of invalid UTF-8: %v; want FailedPrecondition with %q", err, clean)
	}
}
