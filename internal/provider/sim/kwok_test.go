package sim

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// kwokNodeInitializeStage is kwok v0.8.0's node-initialize Stage
// (kustomize/stage/node/fast), with `""` written as "\"\"" because a Go raw
// string cannot hold a backquote.
const kwokNodeInitializeStage = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-initialize
spec:
  resourceRef:
    apiGroup: v1
    kind: Node
  selector:
    matchExpressions:
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'NotIn'
      values:
      - 'True'
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $lastTransitionTime := or .metadata.creationTimestamp $now }}
      conditions:
      {{ range NodeConditions }}
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $lastTransitionTime | Quote }}
        message: {{ .message | Quote }}
        reason: {{ .reason | Quote }}
        status: {{ .status | Quote }}
        type: {{ .type  | Quote}}
      {{ end }}
      allocatable:
      {{ with .status.allocatable }}
      {{ YAML . 1 }}
      {{ else }}
        cpu: 1k
        memory: 1Ti
        pods: 1M
      {{ end }}
      capacity:
      {{ with .status.capacity }}
      {{ YAML . 1 }}
      {{ else }}
        cpu: 1k
        memory: 1Ti
        pods: 1M
      {{ end }}
      {{ $nodeInfo := .status.nodeInfo }}
      {{ $kwokVersion := printf "kwok-%s" Version }}
      nodeInfo:
        architecture: {{ or $nodeInfo.architecture "amd64" }}
        bootID: {{ or $nodeInfo.bootID "\"\"" }}
        containerRuntimeVersion: {{ or $nodeInfo.containerRuntimeVersion $kwokVersion }}
        kernelVersion: {{ or $nodeInfo.kernelVersion $kwokVersion }}
        kubeProxyVersion: {{ or $nodeInfo.kubeProxyVersion $kwokVersion }}
        kubeletVersion: {{ or $nodeInfo.kubeletVersion $kwokVersion }}
        machineID: {{ or $nodeInfo.machineID "\"\"" }}
        operatingSystem: {{ or $nodeInfo.operatingSystem "linux" }}
        osImage: {{ or $nodeInfo.osImage "\"\"" }}
        systemUUID: {{ or $nodeInfo.systemUUID "\"\"" }}
      phase: Running
`

// startKwok runs bin/kwok against the control plane with the
// node-initialize Stage and the sim's KwokNotReadyStage, until the test ends.
func startKwok(t *testing.T) {
	t.Helper()
	e := controlPlane(t)
	dir := t.TempDir()
	kubeconfig, err := e.WriteKubeconfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	config := "apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokConfiguration\noptions:\n  nodeLeaseDurationSeconds: 40\n  nodePlayStageParallelism: 2\n  nodeLeaseParallelism: 2\n" +
		"---\n" + kwokNodeInitializeStage + "---\n" + KwokNotReadyStage
	if err := os.WriteFile(filepath.Join(dir, "kwok.yaml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "kwok.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(e.Root, "bin", "kwok"),
		"--kubeconfig="+kubeconfig,
		"--config="+filepath.Join(dir, "kwok.yaml"),
		"--manage-nodes-with-annotation-selector="+KwokNodeAnnotation+"=fake")
	// A private HOME keeps a developer's ~/.kwok configuration out.
	cmd.Env = append(os.Environ(), "HOME="+dir)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting kwok: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = log.Close()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			data, _ := os.ReadFile(filepath.Join(dir, "kwok.log"))
			t.Logf("kwok log:\n%s", data)
		}
	})
}

// With a real kwok v0.8.0 running the sim's KwokNotReadyStage, kwok keeps
// the sim's Nodes Ready, and the sim's label makes them NotReady and, once
// removed, Ready again.
func TestKwokMakesSimNodesReadyAndNotReady(t *testing.T) {
	e := controlPlane(t)
	startKwok(t)
	s, err := New(Options{Client: e.Client, NodeMode: NodeModeKwok})
	if err != nil {
		t.Fatal(err)
	}
	start(t, s)
	deleteNodesAfter(t, e.Client, "kwok-killed", "kwok-sick")
	mc := class("kwok", basicSpec)
	mustCreate(t, s, machine("kwok-killed", "kwok"), mc)
	mustCreate(t, s, machine("kwok-sick", "kwok"), mc)
	waitReady(t, e.Client, "kwok-killed", corev1.ConditionTrue)
	waitReady(t, e.Client, "kwok-sick", corev1.ConditionTrue)

	vm := s.Cloud().MachineVMs("default", "kwok-killed")[0]
	if _, err := s.Cloud().KillVM(vm.ID); err != nil {
		t.Fatal(err)
	}
	if _, reason := readyOf(waitReady(t, e.Client, "kwok-killed", corev1.ConditionFalse)); reason != "NodeStatusUnknown" {
		t.Errorf("kwok's reason %q; want the sim's", reason)
	}

	if _, err := s.Cloud().SetNodeReady("kwok-sick", false); err != nil {
		t.Fatal(err)
	}
	waitReady(t, e.Client, "kwok-sick", corev1.ConditionFalse)
	if _, err := s.Cloud().SetNodeReady("kwok-sick", true); err != nil {
		t.Fatal(err)
	}
	waitReady(t, e.Client, "kwok-sick", corev1.ConditionTrue)
	// The killed VM's Node stays NotReady: kwok does not undo the label.
	if n, _ := getNode(t, e.Client, "kwok-killed"); n == nil {
		t.Fatal("the killed VM's Node is gone")
	} else if st, _ := readyOf(n); st != corev1.ConditionFalse {
		t.Fatalf("the killed VM's Node went %s", st)
	}
}
