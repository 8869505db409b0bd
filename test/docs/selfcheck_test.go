package docs_test

import (
	"strings"
	"testing"
)

// TestTheChecksFailOnBrokenDocs feeds the checks a page with one mistake
// of each kind they are for, and a page without any: each mistake must be
// reported, and nothing else.
func TestTheChecksFailOnBrokenDocs(t *testing.T) {
	broken := parsePage("docs/broken.md", strings.Join([]string{
		"See `make no-such-target` and `docs/no-such-page.md`, [a link](no-such-link.md), `--machine-health-timeot`.",
		"",
		"```sh",
		"make demo",
		"make no-such-target-either",
		"kubectl millwright rollout stauts web",
		"kubectl millwright get --no-such-flag",
		"kubectl no-such-verb",
		"bin/millwright-manager --no-such-flag",
		"kubectl apply -f config/samples/no-such-file.yaml",
		"go test ./no/such/package/",
		"helm install millwright charts/millwright --set manager.noSuchValue=1",
		"curl http://example.com",
		"```",
		"",
		"<!-- not-run: -->",
		"```sh",
		"make no-such-target-in-an-unexplained-block",
		"```",
	}, "\n"))
	problems := check.problems(broken)
	for _, want := range []string{
		"`make no-such-target`",
		"docs/no-such-page.md does not exist",
		"docs/no-such-link.md does not exist",
		"make no-such-target-either",
		`unknown command "stauts"`,
		"--no-such-flag --help",
		"kubectl no-such-verb",
		"flag --no-such-flag is not in docs/flags/millwright-manager.txt",
		"config/samples/no-such-file.yaml does not exist",
		"go list ./no/such/package/",
		"the chart has no value manager.noSuchValue",
		`no checker for "curl"`,
		"a not-run comment without a reason",
		"no program of this repository has the flag --machine-health-timeot",
	} {
		found := false
		for _, p := range problems {
			found = found || strings.Contains(p, want)
		}
		if !found {
			t.Errorf("no problem reported for %q; reported:\n%s", want, strings.Join(problems, "\n"))
		}
	}
	if len(problems) != 14 {
		t.Errorf("want 14 problems, got %d:\n%s", len(problems), strings.Join(problems, "\n"))
	}

	fine := parsePage("docs/fine.md", strings.Join([]string{
		"<!-- foreign-flags: --kube-client-qps -->",
		"Run `make demo`, read `docs/concepts.md` and [rollouts](rollout.md); `--machine-health-timeout 15m`, `--kube-client-qps`.",
		"",
		"```sh",
		"make demo test",
		"kubectl millwright rollout status web --timeout 10m",
		"kubectl scale machinedeployment demo --replicas=5",
		"bin/millwright-manager --driver sim=unix:///tmp/sim.sock --leader-elect",
		"go test ./test/docs/",
		"helm install millwright charts/millwright --set driver.mode=deployment --set metrics.serviceMonitor.labels.release=prometheus",
		"```",
		"",
		"<!-- not-run: needs the internet -->",
		"```sh",
		"curl http://example.com",
		"```",
	}, "\n"))
	if problems := check.problems(fine); len(problems) != 0 {
		t.Errorf("a correct page was reported:\n%s", strings.Join(problems, "\n"))
	}
}

// TestTheRunnerFailsOnBrokenDocs feeds the runner, on the demo's cluster,
// commands that pass every check above but fail when run: a wrong name,
// output the docs show but the command does not print, an exit code other
// than the docs say, a table header the page shows that the command does
// not print, an example name that stands for nothing, and a fixture
// naming a command the page lacks.
func TestTheRunnerFailsOnBrokenDocs(t *testing.T) {
	broken := parsePage("docs/broken.md", strings.Join([]string{
		"```sh",
		"kubectl get machinedeployment no-such-deployment",
		"kubectl get machinedeployment demo",
		"kubectl millwright get --deployment demo",
		"kubectl millwright rollout history demo",
		"kubectl get machinedeployment example-deployment",
		"kubectl get machinedeployment gone-deployment",
		"```",
		"",
		"```",
		"$ kubectl get machineclass demo-small",
		"NAME   PROVIDER   NO-SUCH-COLUMN",
		"demo-small   sim",
		"```",
	}, "\n"))
	if problems := check.problems(broken); len(problems) != 0 {
		t.Fatalf("the checks without a cluster must pass these commands:\n%s", strings.Join(problems, "\n"))
	}
	d, err := startDemo()
	if err != nil {
		t.Fatal(err)
	}
	problems := d.runPage(broken, fixture{
		path: "docs/broken.md",
		names: map[string]string{
			"example-deployment": "echo demo", // stands for demo: runs fine
			"gone-deployment":    "true",      // stands for nothing
		},
		expect: map[string]want{
			"kubectl get machinedeployment demo":       {out: []string{"NO-SUCH-COLUMN"}},
			"kubectl millwright get --deployment demo": {code: 1},
			"kubectl millwright get --deployment web":  {},
		},
	})
	for _, want := range []string{
		"`kubectl get machinedeployment no-such-deployment`: exit code 1, want 0",
		`the output does not show "NO-SUCH-COLUMN"`,
		"`kubectl millwright get --deployment demo`: exit code 0, want 1",
		`names "kubectl millwright get --deployment web", which is not a command or name of the page`,
		"finding the object gone-deployment stands for",
		"`kubectl get machineclass demo-small`: the output does not show \"NAME PROVIDER NO-SUCH-COLUMN\"",
	} {
		found := false
		for _, p := range problems {
			found = found || strings.Contains(p, want)
		}
		if !found {
			t.Errorf("no problem reported for %q; reported:\n%s", want, strings.Join(problems, "\n"))
		}
	}
	if len(problems) != 6 {
		t.Errorf("want 6 problems, got %d:\n%s", len(problems), strings.Join(problems, "\n"))
	}
}

// TestAPageWithCommandsMustBeListed: a page whose commands would run is
// reported unless a fixture lists it, its blocks are not-run, or it is
// exempt.
func TestAPageWithCommandsMustBeListed(t *testing.T) {
	commands := "```sh\nkubectl millwright get\n```\n"
	ps := []page{
		parsePage("docs/unlisted.md", commands),
		parsePage("docs/listed.md", commands),
		parsePage("docs/exempt.md", commands),
		parsePage("docs/not-run.md", "<!-- not-run: needs a cloud -->\n"+commands),
		parsePage("docs/prose.md", "No commands, only `make demo` in prose.\n"),
	}
	got := unlisted(ps, []fixture{{path: "docs/listed.md"}}, map[string]string{"docs/exempt.md": "merged later"})
	if len(got) != 1 || !strings.Contains(got[0], "docs/unlisted.md has commands to run but is not in runOrder") {
		t.Errorf("want docs/unlisted.md reported, and only it; got:\n%s", strings.Join(got, "\n"))
	}
}
