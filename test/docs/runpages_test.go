package docs_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// runOrder lists the pages whose commands the runner runs, in the order
// it runs them, each with its fixture. A page with commands to run must be
// here (TestEveryPageWithCommandsIsListed): a new page gets a fixture,
// and a block that cannot run here gets <!-- not-run: reason --> in the
// page or a skip reason below.
var runOrder = []fixture{
	{
		path: "docs/getting-started.md",
		skip: map[string]string{
			"make demo":                  "the runner's cluster and fleet are this demo (demo.Run, which `make demo` runs once the tools are built)",
			"make demo PROVIDER=libvirt": "needs root, libvirtd and QEMU; test/e2e's libvirt scenarios run real VMs",
			"make image":                 "hack/image's test builds the same image (make test runs it); here it would write _output/ and compile every program again",
		},
		names: map[string]string{"demo-6c8c966bf8-mppr6": runningMachine("deployment-name", "demo")},
		expect: map[string]want{
			"kubectl get millwright":                          {out: []string{"machineclass.machine.millwright.dev/demo-small", "machinedeployment.machine.millwright.dev/demo "}},
			"kubectl millwright get":                          {out: []string{fleetHeader}},
			"kubectl millwright rollout status demo":          {out: []string{`machinedeployment "demo" successfully rolled out`}},
			"kubectl millwright get --deployment sim-workers": {out: []string{fleetHeader, "sim-workers-"}},
		},
	},
	{
		path:  "README.md",
		names: map[string]string{"md.yaml": "echo test/docs/testdata/md.yaml"},
		expect: map[string]want{
			"kubectl apply -f md.yaml": {code: 1, out: []string{`The MachineDeployment "workers" is invalid`, "maxSurge and maxUnavailable cannot both be zero"}},
		},
		skip: map[string]string{
			"make demo":                  "the runner's cluster and fleet are this demo",
			"make demo PROVIDER=libvirt": "needs root, libvirtd and QEMU; test/e2e's libvirt scenarios run real VMs",
			"make demo PROVIDER=aws":     "runs until stopped; test/e2e's TestAWSFleet runs the manager and millwright-aws against moto",
			"make test":                  "make test runs this test",
			"bin/millwright-sim --endpoint unix:///tmp/sim.sock --kubeconfig KUBECONFIG --node-mode kwok": longRunning,
			"bin/millwright-manager --kubeconfig KUBECONFIG --driver sim=unix:///tmp/sim.sock":            longRunning,
			"bin/millwright-manager --kubeconfig KUBECONFIG --driver sim=in-process:sim":                  longRunning,
		},
	},
	{
		path:  "docs/operations.md",
		setup: freshWeb,
		names: map[string]string{"web-7c9b5-fghij": runningMachine("deployment-name", "web")},
		expect: map[string]want{
			"kubectl millwright rollout status web --timeout 10m": {out: []string{`machinedeployment "web" successfully rolled out`}},
			"kubectl millwright rollout undo web --to-revision 2": {out: []string{"machinedeployment.machine.millwright.dev/web rolled back"}},
		},
		skip: map[string]string{
			"bin/millwright-manager --driver sim=unix:///tmp/sim.sock --machine-health-timeout 15m --max-concurrent-replacements 2 --kube-api-qps 100 --kube-api-burst 200 --leader-elect": longRunning,
		},
	},
	{
		path:  "docs/kubectl-plugin.md",
		setup: freshWeb,
		names: map[string]string{
			"web-6c8c966bf8-mppr6": runningMachine("deployment-name", "web"),
			"web-fffff":            runningMachine("deployment-name", "web"),
			// The set's hash is that of its template today; the name
			// stands for a MachineSet of web whatever the hash becomes.
			"web-6c8c966bf8": "kubectl get machinesets -l machine.millwright.dev/deployment-name=web -o jsonpath='{.items[0].metadata.name}'",
		},
		expect: map[string]want{
			"kubectl millwright get":                               {out: []string{fleetHeader}},
			"kubectl millwright get --class small -o yaml":         {out: []string{"kind: MachineList"}},
			"kubectl millwright describe machine web-fffff":        {out: []string{"Namespace: default", "Owner: MachineSet web-", "Timeline:", "TIME AFTER SINCE CREATED STEP DETAIL", "Waiting for:"}},
			"kubectl millwright rollout status web":                {out: []string{`machinedeployment "web" successfully rolled out`}},
			"kubectl millwright rollout history web":               {out: []string{"REVISION MACHINESET CLASS MACHINES CHANGE-CAUSE", "1 web-", "demo-small", "2 web-", "demo-large"}},
			"kubectl millwright rollout history web --revision 2":  {out: []string{"with revision #2", "Class: demo-large"}},
			"kubectl millwright rollout resume web -o yaml":        {out: []string{"kind: MachineDeployment", "name: web"}},
			"kubectl millwright rollout restart web":               {out: []string{"machinedeployment.machine.millwright.dev/web restarted"}},
			"kubectl millwright freeze machinedeployment/web":      {out: []string{"machinedeployment.machine.millwright.dev/web frozen"}},
			"kubectl millwright drain status web-6c8c966bf8-mppr6": {out: []string{"Machine: web-", "Node: web-", "Drain: not started"}},
		},
	},
	{
		path: "docs/helm.md",
		// What `helm install --create-namespace` would have made (the
		// install itself is not-run: see the page).
		setup: []step{sh("kubectl create namespace millwright-system --dry-run=client -o yaml | kubectl apply -f -")},
		skip: map[string]string{
			"make image": "hack/image's test builds the same image (make test runs it); here it would write _output/ and compile every program again",
		},
	},
	{
		path: "docs/preservation.md",
		// "What kubectl shows": a MachineSet "pool" of one Machine that,
		// preserved when-failed, failed (its Node NotReady through the
		// sim's admin API; the set's health timeout is 5s) and was
		// replaced; the preserved Machine's Node is cordoned.
		setup: []step{
			sh("kubectl apply -f test/docs/testdata/pool.yaml"),
			sh("kubectl wait machineset/pool --for=jsonpath='{.status.readyReplicas}'=1 --timeout=3m"),
			failPreserved(runningMachine("set-name", "pool")),
			sh("kubectl wait machineset/pool --for=jsonpath='{.status.availableReplicas}'=1 --timeout=3m"),
		},
		names: map[string]string{"pool-7xk2q": failedMachine},
		expect: map[string]want{
			// The headers are checked against the page's output.
			"kubectl get machines":         {out: []string{" Failed sim://"}},
			"kubectl get machineset pool":  {out: []string{"pool 1 1"}},
			"kubectl get nodes pool-7xk2q": {out: []string{"NotReady,SchedulingDisabled"}},
		},
	},
	{
		path: "docs/writing-a-driver.md",
		skip: map[string]string{
			"bin/millwright-manager --driver tiny=unix:///run/tiny.sock --driver-call-timeout 2m --max-concurrent-creates 20": longRunning,
			"go test ./examples/tinydriver/":   "make test runs this package",
			"go test ./pkg/driver/drivertest/": "make test runs this package",
		},
	},
	{
		path: "docs/benchmarks.md",
		skip: map[string]string{
			"make bench":        bench,
			"N=5000 make bench": bench,
			"go run ./test/bench -n 200 -scenarios floor,scale-up -steady 30s -keep": bench + "; -keep leaves its cluster running until Ctrl-C",
		},
	},
	{
		path: "docs/benchmarks-history.md",
		skip: map[string]string{
			"go build -o bin/ ./cmd/...":                                                      "writes the reader's bin/; the runner runs the same programs, built by TestMain",
			"go run ./test/bench -n 1000 -scenarios floor,scale-up":                           bench,
			"go run ./test/bench -n 200 -scenarios scale-up,rolling-update,scale-down":        bench,
			"go run ./test/bench -n 1000 -scenarios floor,scale-up,rolling-update,scale-down": bench,
		},
	},
	{
		path: "docs/rollout.md",
		skip: map[string]string{
			"go run ./test/bench -n 100 -scenarios scale-up,rolling-update -timeline docs/images/rollout-timeline.csv": "records a new timeline over the committed docs/images/rollout-timeline.csv, in minutes of benchmark",
			"go run ./hack/rolloutplot -in docs/images/rollout-timeline.csv -o docs/images/rollout-timeline.svg":       "make generate draws it; hack/rolloutplot's test fails when the committed picture is stale",
		},
	},
	{
		path: "docs/providers/node-agent.md",
		skip: map[string]string{
			"go test -tags qemu -count=1 -v -run TestBoot ./internal/vminit/": "boots a VM under QEMU (make vm-tools); test/e2e's VM scenarios boot the same kernel and initramfs",
		},
	},
}

// notYetListed are pages other branches are adding while this list was
// written; they have no fixture yet. Whoever merges a page lists it in
// runOrder with its fixture and removes it from here.
var notYetListed = map[string]string{}

const (
	fleetHeader = "NAME PHASE REASON AGE PROVIDER ID NODE NODE READY PODS"
	longRunning = "a long-running process: the runner's demo runs the manager and the sim the same way; the flags are checked with --help and docs/flags"
	bench       = "the scale benchmark runs for many minutes with 1000 Machines or more, outside make test"
)

// freshWeb is the MachineDeployment "web" the plugin's and the
// operations' examples use, new, with two revisions (revision 1 of the
// demo's small class, revision 2 of its large one), both rolled out.
var freshWeb = []step{
	sh("kubectl delete machinedeployment web --ignore-not-found --cascade=foreground --timeout=3m"),
	sh("kubectl apply -f config/demo/extras/machineclass-large.yaml -f test/docs/testdata/web.yaml"),
	sh("kubectl millwright rollout status web --timeout 3m"),
	sh(`kubectl patch machinedeployment web --type merge -p '{"spec":{"template":{"spec":{"class":{"name":"demo-large"}}}}}'`),
	sh("kubectl millwright rollout status web --timeout 3m"),
}

// failedMachine prints the name of the Failed Machine of the set "pool".
const failedMachine = `kubectl get machines -l machine.millwright.dev/set-name=pool -o jsonpath='{.items[?(@.status.phase=="Failed")].metadata.name}'`

// failPreserved is a setup step that preserves the Machine the shell
// command machine prints (when-failed), makes its Node NotReady through
// the sim's admin API (what the demo's printed curl commands do), as a
// failed host would, and waits for the Machine to be Failed and its Node
// cordoned.
func failPreserved(machine string) step {
	return func(d *demoEnv) error {
		r := d.sh(machine)
		name := strings.TrimSpace(r.out)
		if r.err != nil || name == "" {
			return fmt.Errorf("`%s`: %v %s", machine, r.err, r.out)
		}
		if err := sh("kubectl millwright preserve " + name + " --when-failed")(d); err != nil {
			return err
		}
		resp, err := http.Post(d.simAdmin+"/nodes/"+name+"/not-ready", "", nil)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("the sim's admin API: POST /nodes/%s/not-ready: %s: %s", name, resp.Status, body)
		}
		if err := sh("kubectl wait machine/" + name + " --for=jsonpath='{.status.phase}'=Failed --timeout=3m")(d); err != nil {
			return err
		}
		return sh("kubectl wait node/" + name + " --for=jsonpath='{.spec.unschedulable}'=true --timeout=3m")(d)
	}
}

// runningMachine is a command printing the name of a Running Machine with
// the label machine.millwright.dev/KEY=VALUE.
func runningMachine(key, value string) string {
	return fmt.Sprintf(`kubectl get machines -l machine.millwright.dev/%s=%s -o jsonpath='{.items[?(@.status.phase=="Running")].metadata.name}' | cut -d' ' -f1`, key, value)
}

// TestEveryPageWithCommandsIsListed fails for a page with commands to run
// that runOrder does not list, and for a fixture whose page is gone or
// whose keys the page does not have; it needs no cluster.
func TestEveryPageWithCommandsIsListed(t *testing.T) {
	ps := pages(t)
	byPath := map[string]page{}
	for _, p := range ps {
		byPath[p.path] = p
	}
	for _, msg := range unlisted(ps, runOrder, notYetListed) {
		t.Error(msg)
	}
	for _, fx := range runOrder {
		if notYetListed[fx.path] != "" {
			t.Errorf("runOrder lists %s: remove it from notYetListed", fx.path)
		}
		p, ok := byPath[fx.path]
		if !ok {
			t.Errorf("runOrder lists %s, which does not exist", fx.path)
			continue
		}
		for _, key := range fx.unknownKeys(p) {
			t.Errorf("%s: the fixture names %q, which is not a command or name of the page", fx.path, key)
		}
	}
}

// TestEveryCommandInTheDocsRuns runs the docs' commands for real, page by
// page in runOrder, on the demo's cluster and fleet, as a reader following
// them would.
func TestEveryCommandInTheDocsRuns(t *testing.T) {
	d, err := startDemo()
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]page{}
	for _, p := range pages(t) {
		byPath[p.path] = p
	}
	for _, fx := range runOrder {
		p, ok := byPath[fx.path]
		if !ok {
			t.Errorf("runOrder lists %s, which does not exist", fx.path)
			continue
		}
		t.Run(fx.path, func(t *testing.T) {
			for _, msg := range d.runPage(p, fx) {
				t.Error(msg)
			}
			ran, skipped := 0, 0
			for _, b := range p.blocks {
				if b.notRun == "" {
					for _, l := range b.commands() {
						if _, ok := fx.skip[l]; ok {
							skipped++
						} else {
							ran++
						}
					}
				}
			}
			t.Logf("%d commands run after %d of setup, %d not run (the fixture says why)", ran, len(fx.setup), skipped)
		})
	}
}
