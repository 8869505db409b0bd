// Package sim is the simulated cloud provider "sim": a driver.Driver whose
// VMs live in memory (optionally snapshotted to a JSON file) and register
// their Nodes in a real cluster, like kubelets would. Millwright's demos,
// tests, end-to-end scenarios and scale benchmarks run on it.
//
//	s, err := sim.New(sim.Options{Client: c, NodeMode: sim.NodeModeKwok, SnapshotPath: "sim.json"})
//	go s.Start(ctx)                 // Node registration and snapshots
//	var d driver.Driver = s         // every method, optional ones included
//	http.Handle("/", s.AdminHandler())
//	s.Cloud().History()             // every VM ever created
//
// # The cloud
//
// A VM's ID derives from its Machine's namespace and name (the first VM of
// default/m1 is always vm-<10 hex digits of sha256("default/m1")>), so
// CreateMachine is idempotent: a second call for the same Machine returns
// the same VM (as it adopts any VM claiming the Machine, as a real
// provider finding its tagged VM does). IDs are never reused: a later VM for the same Machine name
// gets the next ID in the sequence. The providerID is
// sim://<region>/<zone>/<vm-id>, the Node name is the Machine's name (with
// a suffix only if another live VM has a Node of that name), the InternalIP
// is derived from the ID in 10.0.0.0/8, and the zone is the class's least
// loaded zone, ties broken by the Machine's name. VMs are tagged with
// their MachineClass; ListMachines lists a class's VMs.
//
// GetMachineStatus answers NotFound for a Machine without a VM, OutOfRange
// when several VMs claim it (see POST /orphans), and, for a class with
// requireInitialization, Uninitialized until InitializeMachine ran; a
// killed VM still exists and is reported. DeleteMachine of a VM that does
// not exist is OK. UpdateMachine applies tags three ways: tags the last
// applied providerSpec had and the class dropped are removed, others'
// tags kept; it records the providerSpec as applied on the VM. It may be
// given another class than the VM's (an in-place update,
// docs/in-place-updates.md): the VM then belongs to that class. What a
// running VM cannot take it refuses with FailedPrecondition before
// changing anything, and the Machine is replaced instead: another region,
// a zone list without the VM's zone, another image, another instance type
// (a resize would change the Node's capacity, which the sim's "kubelet"
// reports only at registration). bootDelay, bootJitter,
// requireInitialization and faults are taken as they are: they only
// matter to new VMs or to the simulation. To make an update fail for a
// test, use faults.update: {"code":"Internal"} fails it for good (an
// in-place update ends Failed), {"code":"Unavailable","count":2} fails it
// twice and then lets it through.
// lastKnownState names the VM, and calls use it to pick the Machine's VM
// before its providerID is set.
// GetVolumeIDs returns the volume handles of CSI volumes of driver
// sim.millwright.dev and skips every other volume (hostPath, local, ...).
//
// # providerSpec
//
// A MachineClass's spec.providerSpec for the sim is a JSON object, decoded
// strictly (unknown and duplicate fields are refused). Every bad value is
// InvalidArgument with a message naming the field, for example
// "providerSpec.faults.create.latency: must not be negative".
//
//	{
//	  "region": "local",                  // required, a DNS label
//	  "zones": ["local-a", "local-b"],    // required, DNS labels, no repeats
//	  "instanceType": "sim.small",        // sim.small (default), sim.medium, sim.large, sim.xlarge, sim.arm
//	  "image": "ubuntu-24.04",            // free-form; a running VM's image cannot change (FailedPrecondition)
//	  "tags": {"team": "infra"},          // hot-updatable through UpdateMachine
//	  "bootDelay": "2s",                  // creation until the Node registers (durations: 0 to 1h)
//	  "bootJitter": "1s",                 // plus up to this much, per VM
//	  "requireInitialization": true,      // VMs are Uninitialized until InitializeMachine ran
//	  "capacityType": "spot",             // or "on-demand": reported as node.millwright.dev/capacity-type
//	  "faults": {
//	    "seed": 42,                       // of the deterministic random source
//	    "create": {                       // also: initialize, delete, getStatus, list, update
//	      "latency": "500ms", "jitter": "250ms",
//	      "code": "Unavailable",          // a machine error code name (driver.ParseCode)
//	      "count": 2,                     // fail the first 2 calls per Machine (per class for list)
//	      "probability": 0.1,             // or: fail each call with this probability (not both)
//	      "message": "...",               // optional; a default names the fault
//	      "afterEffect": true             // the call takes effect, then fails (a lost response)
//	    },
//	    "bootFailure": {"count": 1},      // VMs whose Node never registers: first N of the class,
//	                                      // {"probability": p}, or {} for all
//	    "nodeNotReady": {"after": "30s", "probability": 0.5},  // Nodes that go NotReady after registering
//	    "outOfCapacityZones": ["local-b"] // a create placed there fails with ResourceExhausted
//	  }
//	}
//
// An operation fault with a code but neither count nor probability fails
// every call. Latency honours the call's context: a call whose context
// ends while it waits returns DeadlineExceeded or Canceled. Probabilities
// and jitters are drawn from the seed, the operation, the Machine and the
// call's number, so a scenario replays the same regardless of timing.
//
// # Nodes
//
// Once a VM has booted (bootDelay), a worker pool registers its Node
// through the controller-runtime client in Options.Client, off the driver
// call's path: name, spec.providerID, labels kubernetes.io/hostname,
// kubernetes.io/os, kubernetes.io/arch, topology.kubernetes.io/region and
// zone, node.kubernetes.io/instance-type plus the class's nodeTemplate
// labels, capacity and allocatable from nodeTemplate.capacity over the
// instance type's, addresses, the class's nodeTemplate taints and the
// taint machine.millwright.dev/uninitialized:NoSchedule. The sim writes
// labels and taints only at registration, as a kubelet does; afterwards it
// writes only readiness. Failed writes are retried with backoff a bounded
// number of times; every NodeResync all live VMs' Nodes are checked again,
// behind the queue's own work (the Node of a VM made meanwhile is not held
// back until every Node has been read). Nodes are read through Client, or
// from NodeReader when set (millwright-sim gives it an informer's cache,
// so checks and resyncs cost the API server no request).
// Deleting a VM never deletes its Node (the machine controller does that)
// but makes it NotReady. Like a kubelet, a VM registers its Node once: a
// Node deleted from the cluster is not registered again while its VM runs.
//
// Two node modes:
//
//   - builtin: the sim writes the Ready condition itself: True once
//     registered, False (KubeletNotReady) for a Node made NotReady, Unknown
//     (NodeStatusUnknown) for the Node of a killed or deleted VM. For
//     envtest, where nothing else keeps Nodes Ready. It does not renew
//     Leases, so do not run kube-controller-manager against it.
//   - kwok: the Node carries the annotation kwok.x-k8s.io/node=fake and the
//     label type=kwok, and a running kwok keeps it Ready, renews its Lease
//     and runs its pods; the sim never writes conditions. To make such a
//     Node NotReady, the sim sets the label
//     node-not-ready.stage.kwok.x-k8s.io=true (and the stage's reason and
//     message annotations), which kwok v0.8.0's node-not-ready chaos Stage
//     (kustomize/stage/node/chaos/node-not-ready.yaml,
//     here) matches: after its 1-2s delay kwok reports Ready=False, and
//     keeps doing so while the label is there, since the Stage's weight
//     outranks node-initialize and heartbeat Stages that would make the
//     Node Ready again. kwok must run with that Stage next to its node
//     stages. Making the Node Ready again removes the label. kwok reports
//     False, not Unknown, for a killed VM's Node; both are "not Ready".
//
// # Admin API
//
// AdminHandler serves JSON:
//
//	GET    /vms[?namespace=&class=&machine=]   the VMs
//	GET    /vms/{id}                           one VM
//	DELETE /vms/{id}                           delete a VM behind Millwright's back (its Node goes NotReady)
//	POST   /vms/{id}/kill                      stop a VM: it stays, its Node goes NotReady
//	POST   /vms/{id}/announce                  body Announcement {"kind": "Interruption", "notice": "2m"}:
//	                                           the provider announces an interruption (or a
//	                                           RebalanceRecommendation) of the VM; ReceiveEvents
//	                                           answers it until acknowledged. The VM is not taken away.
//	GET    /history[?namespace=&class=&machine=]  every VM ever created, with deletion times
//	GET    /calls?namespace=&class=            CallStats: the class's CreateMachine and DeleteMachine
//	                                           calls in flight, and the most at once since the sim started
//	POST   /nodes/{name}/not-ready             make a Node NotReady; its VM keeps running
//	POST   /nodes/{name}/ready                 let it be Ready again
//	POST   /orphans                            body OrphanRequest: make a VM for a made-up Machine
//	                                           name of a class (or a second VM for a real one)
//	GET    /outage                             {"outage": bool}
//	POST   /outage                             body {"outage": true} or ?on=true: every driver call
//	                                           but GetPluginInfo answers Unavailable while on
//	GET    /zones/out-of-capacity              {"zones": [...]}: the zones made out of capacity
//	POST   /zones/{zone}/out-of-capacity       every create placed in the zone (any class) answers
//	                                           ResourceExhausted; its running VMs stay
//	POST   /zones/{zone}/capacity              give the zone its capacity back
//
// Errors are {"error": "...", "code": "NotFound"} with a matching HTTP status.
package sim
