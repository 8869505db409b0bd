// Package localcluster runs a real, local Kubernetes control plane from the
// binaries `make tools` builds into bin/: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok, each a child process
// listening on a free 127.0.0.1 port. `make demo` and the end-to-end tests
// run Millwright against it.
//
//	c, err := localcluster.Start(ctx, localcluster.Options{Dir: dir})
//	if err != nil { ... }
//	defer c.Stop()
//	cfg := c.RESTConfig() // or KUBECONFIG=c.Kubeconfig()
//
// # Components
//
// Start starts them in order and waits until each is healthy before the
// next: etcd (GET /health), kube-apiserver (/readyz as the administrator),
// kube-controller-manager (/healthz on its secure port, and the "default"
// ServiceAccount its serviceaccount controller creates, without which no
// pod can be created), kube-scheduler (/healthz) and kwok (a probe Node it
// must make Ready). A component that exits or stays unhealthy past
// Options.StartTimeout fails Start with an error naming it and quoting the
// tail of its log; whatever was already running is then stopped.
//
// Certificates are generated into <Dir>/pki: one CA, a serving certificate
// for 127.0.0.1/localhost shared by the three kube components, a
// service-account signing key pair, a front-proxy CA and client
// certificate for the aggregation layer, and client certificates: the
// administrator and kwok in group system:masters, kube-controller-manager
// and kube-scheduler as the users the default RBAC policy grants their
// permissions to (system:kube-controller-manager, system:kube-scheduler).
// kube-controller-manager runs every default controller (--controllers=*)
// plus bootstrapsigner and tokencleaner, with per-controller
// service-account credentials, and signs CSRs with the CA. Leader election
// is off: there is one of each.
//
// # Nodes: TLS bootstrap
//
// Real nodes (a kubelet, or millwright-node-agent in a VM) join as with
// kubeadm: the API server accepts bootstrap tokens
// (--enable-bootstrap-token-auth) and runs the NodeRestriction admission
// plugin, and once it is ready Start creates kubeadm's three
// ClusterRoleBindings (nodeBootstrapRBAC): group system:bootstrappers to
// system:node-bootstrapper (create CSRs) and to
// system:certificates.k8s.io:certificatesigningrequests:nodeclient (the
// csrapproving controller approves their node client CSRs), group
// system:nodes to ...:selfnodeclient (renewals). Options.APIServerExtraIPs
// adds the address a VM reaches the API server at to its serving
// certificate, and Options.APIServerBindAddress 0.0.0.0 lets it listen
// there. docs/providers/node-agent.md shows a VM joining.
//
// # Nodes: kwok
//
// kwok manages the Nodes annotated kwok.x-k8s.io/node=fake
// (KwokNodeAnnotation), which is what internal/provider/sim marks its Nodes
// with in kwok node mode. It plays their kubelet with kwok v0.8.0's own
// Stages (stages/, embedded): node-initialize makes a Node Ready,
// node-heartbeat-with-lease and kwok's Node Leases keep it alive for
// kube-controller-manager's node lifecycle controller, pod-ready runs pods
// bound to it, pod-complete completes Job pods and pod-delete finishes
// deleting pods.
//
// kwok renews each Node's Lease every quarter of its duration (40 s by
// default, as a kubelet): about 100 Lease PUTs a second per 1000 Nodes.
// Options.NodeHeartbeats lengthens the Lease, adds renewal workers and
// workers for the Node Stages (4 by default, each a status PATCH in
// flight), and gives kube-controller-manager a matching
// --node-monitor-grace-period; HeartbeatsFor(n) chooses them for n Nodes
// (the defaults up to 1000), as the scale benchmark does
// (docs/benchmarks.md).
//
// Chaos: the label node-not-ready.stage.kwok.x-k8s.io=true
// (KwokNotReadyLabel) on a Node makes kwok report it Ready=False after a 1-2
// second delay, with the reason and message read from the annotations
// node-not-ready.stage.kwok.x-k8s.io/reason and .../message, for as long as
// the label stays (the Stage's weight outranks node-initialize); removing
// the label makes it Ready again. This is the node/chaos Stage of kwok
// v0.8.0, the one the sim sets the label for.
//
// # Files
//
// Dir holds everything: pki/, etcd/ (data), kubeconfig (the administrator's,
// unless Options.KubeconfigPath says otherwise), one kubeconfig per
// component, kwok/ (its configuration and HOME) and logs/<component>.log.
//
// # Processes
//
// Every child runs in its own process group, so a Ctrl-C at the terminal
// reaches only the parent, which then stops the children in order, and so
// Stop can signal a child together with anything it spawned. On Linux each
// child also gets SIGKILL when the parent dies (Pdeathsig), so even a
// `kill -9` of the parent leaves no control plane behind.
package localcluster
