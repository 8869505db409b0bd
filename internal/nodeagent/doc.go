// Package nodeagent is millwright-node-agent's join logic: what a kubelet
// does to join a cluster by TLS bootstrap and stay a live Node, without
// running any container. It reads the user data the TokenBootstrapConfig
// provider renders (a bootstrap kubeconfig and the kubelet's
// --hostname-override) and the cloud-init meta-data (providerID), trades
// the bootstrap token for a node client certificate through a
// CertificateSigningRequest that kube-controller-manager approves and
// signs, registers the Node with the machine's real CPUs and memory, and
// then renews its Lease and reports its status at the kubelet's default
// intervals until its context ends.
//
// The Node reports as its kubeletVersion the Machine's spec.version, which
// the user data carries (VersionPath). With a state device (State,
// Options.StatePath) the agent keeps its credentials and version across
// reboots, and carries out in-place updates: on its Node's
// machine.millwright.dev/update=ready it checks the version, records it and
// reboots the machine (WatchUpdates).
//
// What it reads, what it ignores, and what happens to pods bound to such a
// Node: docs/providers/node-agent.md; the update handshake:
// docs/in-place-updates.md ("The node side").
package nodeagent
