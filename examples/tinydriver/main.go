// Command tinydriver is the smallest complete Millwright driver: its "cloud"
// is a map. Replace the map with your provider's API and it is a real one.
package main

import (
	"context"
	"log"
	"sync"

	"github.com/millwright-dev/millwright/pkg/driver"
)

type tiny struct {
	driver.UnimplementedDriver // optional methods answer Unimplemented
	mu                         sync.Mutex
	vms                        map[string]string // Machine name -> providerID
}

func (d *tiny) CreateMachine(ctx context.Context, r *driver.CreateMachineRequest) (*driver.CreateMachineResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, driver.Errorf(driver.CodeOf(err), "%v", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	id, ok := d.vms[r.Machine.Name]
	if !ok { // one VM per Machine name, however often we are asked
		id = "tiny:///" + r.Machine.Namespace + "/" + r.Machine.Name
		d.vms[r.Machine.Name] = id
	}
	return &driver.CreateMachineResponse{ProviderID: id, NodeName: r.Machine.Name}, nil
}

func (d *tiny) DeleteMachine(_ context.Context, r *driver.DeleteMachineRequest) (*driver.DeleteMachineResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.vms, r.Machine.Name) // deleting what is not there is OK
	return &driver.DeleteMachineResponse{}, nil
}

func (d *tiny) GetPluginInfo(context.Context, *driver.GetPluginInfoRequest) (*driver.GetPluginInfoResponse, error) {
	return &driver.GetPluginInfoResponse{Name: "tiny", Version: "v0.1.0"}, nil
}

func main() { log.Fatal(driver.Serve(&tiny{vms: map[string]string{}})) }
