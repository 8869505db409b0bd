// Command tinydriver is the smallest complete Millwright driver: its "cloud"
// is a map. Replace the map with your provider's API and it is a real one.
package main

import (
	"context"
	"log"
	"sync"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/pkg/driver"
)

type tiny struct {
	driver.UnimplementedDriver // optional methods answer Unimplemented
	mu                         sync.Mutex
	vms                        map[string]string // "namespace/name" of the Machine -> providerID
}

// key names a Machine: Machines are namespaced, so two of one name in two
// namespaces are two Machines and get two VMs.
func key(m *v1alpha1.Machine) string { return m.Namespace + "/" + m.Name }

func (d *tiny) CreateMachine(ctx context.Context, r *driver.CreateMachineRequest) (*driver.CreateMachineResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, driver.Errorf(driver.CodeOf(err), "%v", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	id, ok := d.vms[key(r.Machine)]
	if !ok { // one VM per Machine, however often we are asked
		id = "tiny:///" + key(r.Machine)
		d.vms[key(r.Machine)] = id
	}
	// Nodes are not namespaced: the namespace (a DNS label, no dots) keeps
	// two Machines' Nodes apart.
	return &driver.CreateMachineResponse{ProviderID: id, NodeName: r.Machine.Namespace + "." + r.Machine.Name}, nil
}

func (d *tiny) DeleteMachine(_ context.Context, r *driver.DeleteMachineRequest) (*driver.DeleteMachineResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.vms, key(r.Machine)) // deleting what is not there is OK
	return &driver.DeleteMachineResponse{}, nil
}

func (d *tiny) GetPluginInfo(context.Context, *driver.GetPluginInfoRequest) (*driver.GetPluginInfoResponse, error) {
	return &driver.GetPluginInfoResponse{Name: "tiny", Version: "v0.1.0"}, nil
}

func main() { log.Fatal(driver.Serve(&tiny{vms: map[string]string{}})) }
