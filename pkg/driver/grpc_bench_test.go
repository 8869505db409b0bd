package driver_test

import (
	"context"
	"testing"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// BenchmarkDriverCall measures one GetMachineStatus with a realistic
// Machine, MachineClass and Secret: called in-process, and through the
// gRPC client and server over a unix socket (JSON encoding of the objects,
// protobuf, the socket, decoding). The difference is the price of running
// a provider as its own program.
func BenchmarkDriverCall(b *testing.B) {
	req := &driver.GetMachineStatusRequest{Machine: testMachine("workers-7d9f-x2k4p"), MachineClass: testClass(), Secret: testSecret()}
	fake := newFake("bench")
	fake.setResponse(driver.MethodGetMachineStatus, &driver.GetMachineStatusResponse{
		ProviderID: "sim://zone-a/workers-7d9f-x2k4p", NodeName: "workers-7d9f-x2k4p", Addresses: req.Machine.Status.Addresses,
	})

	run := func(b *testing.B, d driver.Driver) {
		ctx := context.Background()
		if _, err := d.GetMachineStatus(ctx, req); err != nil { // connect outside the timing
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			resp, err := d.GetMachineStatus(ctx, req)
			if err != nil || resp.ProviderID == "" {
				b.Fatalf("GetMachineStatus = %v, %v", resp, err)
			}
		}
	}
	b.Run("in-process", func(b *testing.B) { run(b, fake) })
	b.Run("grpc-unix", func(b *testing.B) {
		path := socketPath(b)
		servePlugin(b, path, fake)
		run(b, dial(b, path))
	})
}
