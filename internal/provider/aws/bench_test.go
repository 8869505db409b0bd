package aws

import (
	"fmt"
	"sync"
	"testing"

	"github.com/millwright-dev/millwright/internal/motoserver"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// BenchmarkCreateDelete creates and deletes b.N Machines against moto,
// 10 at a time, and reports the EC2 calls per Machine the proxy counted:
// the cost that matters against EC2's API rate limits.
//
//	go test ./internal/provider/aws -run '^$' -bench CreateDelete -benchtime 200x
func BenchmarkCreateDelete(b *testing.B) {
	p := motoserver.NewProxy(b, moto.URL)
	d := newDriver(b, p.URL)
	c := class("bench", validSpec)
	const parallel = 10
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed error
	b.ResetTimer()
	for range parallel {
		wg.Go(func() {
			for i := range work {
				m := machine(fmt.Sprintf("bench-%d-%d", b.N, i))
				_, err := d.CreateMachine(ctxT(b), &driver.CreateMachineRequest{Machine: m, MachineClass: c, Secret: testSecret()})
				if err == nil {
					_, err = d.DeleteMachine(ctxT(b), &driver.DeleteMachineRequest{Machine: m, MachineClass: c, Secret: testSecret()})
				}
				if err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
				}
			}
		})
	}
	for i := range b.N {
		work <- i
	}
	close(work)
	wg.Wait()
	b.StopTimer()
	if failed != nil {
		b.Fatal(failed)
	}
	n := float64(b.N)
	b.ReportMetric(float64(p.Calls("RunInstances"))/n, "RunInstances/machine")
	b.ReportMetric(float64(p.Calls("DescribeInstances"))/n, "DescribeInstances/machine")
	b.ReportMetric(float64(p.Calls("TerminateInstances"))/n, "TerminateInstances/machine")
	b.ReportMetric(n/b.Elapsed().Seconds(), "machines/s")
}
