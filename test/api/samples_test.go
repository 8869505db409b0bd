package api_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

func TestSamplesAreAccepted(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(env.Root, "config", "samples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	created := 0
	for _, file := range files {
		if filepath.Base(file) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(data), "\n---\n") {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if err := env.Client.Create(context.Background(), u); err != nil {
				t.Errorf("%s: sample %s/%s refused: %v", filepath.Base(file), u.GetKind(), u.GetName(), err)
			}
			created++
		}
	}
	if created < 4 {
		t.Fatalf("want a sample of every kind; created only %d objects", created)
	}
}

func TestDefaultsAreApplied(t *testing.T) {
	ctx := context.Background()
	md := object(t, validDeployment)
	set(md, nil, "spec", "replicas")
	if err := create(t, md); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.MachineDeployment{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(md), got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Replicas != 1 {
		t.Errorf("replicas defaulted to %d, want 1", got.Spec.Replicas)
	}
	if got.Spec.Strategy.Type != v1alpha1.RollingUpdateStrategy {
		t.Errorf("strategy type defaulted to %q, want RollingUpdate", got.Spec.Strategy.Type)
	}
	ru := got.Spec.Strategy.RollingUpdate
	if ru == nil || ptr.Deref(ru.MaxSurge, intstr.FromInt32(-1)) != intstr.FromInt32(1) ||
		ptr.Deref(ru.MaxUnavailable, intstr.FromInt32(-1)) != intstr.FromInt32(0) {
		t.Errorf("rollingUpdate defaulted to %+v, want maxSurge 1, maxUnavailable 0", ru)
	}
	if ru != nil && ru.ReplacementPolicy != v1alpha1.TerminationComplete {
		t.Errorf("replacementPolicy defaulted to %q, want TerminationComplete", ru.ReplacementPolicy)
	}
	if ptr.Deref(got.Spec.RevisionHistoryLimit, -1) != 10 {
		t.Errorf("revisionHistoryLimit defaulted to %v, want 10", got.Spec.RevisionHistoryLimit)
	}
	if ptr.Deref(got.Spec.ProgressDeadlineSeconds, -1) != 600 {
		t.Errorf("progressDeadlineSeconds defaulted to %v, want 600", got.Spec.ProgressDeadlineSeconds)
	}

	// A partly given rollingUpdate gets the missing bound defaulted.
	partial := object(t, validDeployment)
	set(partial, map[string]any{"rollingUpdate": map[string]any{"maxUnavailable": "25%"}}, "spec", "strategy")
	if err := create(t, partial); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(partial), got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Strategy.Type != v1alpha1.RollingUpdateStrategy || *got.Spec.Strategy.RollingUpdate.MaxSurge != intstr.FromInt32(1) {
		t.Errorf("partial strategy defaulted to %+v, want type RollingUpdate and maxSurge 1", got.Spec.Strategy)
	}
	if p := got.Spec.Strategy.RollingUpdate.ReplacementPolicy; p != v1alpha1.TerminationComplete {
		t.Errorf("partial strategy's replacementPolicy defaulted to %q, want TerminationComplete", p)
	}

	ms := object(t, validSet)
	set(ms, nil, "spec", "replicas")
	if err := create(t, ms); err != nil {
		t.Fatal(err)
	}
	gotSet := &v1alpha1.MachineSet{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ms), gotSet); err != nil {
		t.Fatal(err)
	}
	if gotSet.Spec.DeletePolicy != v1alpha1.DeletePolicyRandom || gotSet.Spec.Replicas != 1 {
		t.Errorf("MachineSet defaulted to deletePolicy %q, replicas %d; want Random, 1", gotSet.Spec.DeletePolicy, gotSet.Spec.Replicas)
	}
}

// TestScaleSubresource scales a MachineDeployment and a MachineSet through
// /scale, as kubectl scale and the cluster-autoscaler do.
func TestScaleSubresource(t *testing.T) {
	ctx := context.Background()
	for _, manifest := range []string{validDeployment, validSet} {
		u := object(t, manifest)
		t.Run(u.GetKind(), func(t *testing.T) {
			if err := create(t, u); err != nil {
				t.Fatal(err)
			}
			// The controllers publish the selector in status; /scale reads it there.
			set(u, "pool=a", "status", "selector")
			set(u, 2, "status", "replicas")
			if err := update(u, true); err != nil {
				t.Fatal(err)
			}

			// The typed client serves /scale; the unstructured one cannot.
			runtimeObj, err := env.Scheme.New(u.GroupVersionKind())
			if err != nil {
				t.Fatal(err)
			}
			typed := runtimeObj.(client.Object)
			typed.SetNamespace(u.GetNamespace())
			typed.SetName(u.GetName())

			scale := &autoscalingv1.Scale{}
			if err := env.Client.SubResource("scale").Get(ctx, typed, scale); err != nil {
				t.Fatalf("get /scale: %v", err)
			}
			want := int32(u.Object["spec"].(map[string]any)["replicas"].(int64))
			if scale.Spec.Replicas != want || scale.Status.Replicas != 2 || scale.Status.Selector != "pool=a" {
				t.Fatalf("/scale = spec %d, status %d, selector %q; want %d, 2, pool=a",
					scale.Spec.Replicas, scale.Status.Replicas, scale.Status.Selector, want)
			}

			patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":7}}`))
			if err := env.Client.SubResource("scale").Patch(ctx, typed, patch); err != nil {
				t.Fatalf("patch /scale: %v", err)
			}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
				t.Fatal(err)
			}
			if got, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); got != 7 {
				t.Fatalf("spec.replicas = %d after scaling to 7", got)
			}

			negative := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":-1}}`))
			if err := env.Client.SubResource("scale").Patch(ctx, typed, negative); err == nil {
				t.Fatal("scaling to -1 through /scale was accepted")
			}
		})
	}
}

// TestKubectlExplain checks that the doc comments reach kubectl explain.
func TestKubectlExplain(t *testing.T) {
	kubectl := filepath.Join(env.Root, "bin", "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		t.Fatalf("kubectl not built: run `make tools` (%v)", err)
	}
	kubeconfig, err := env.WriteKubeconfig(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The API server publishes a new CRD's OpenAPI a moment after the CRD
	// is established, so kubectl may not find it at once.
	var out []byte
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) {
			out, err = exec.Command(kubectl, "--kubeconfig", kubeconfig, "explain", "machinedeployment.spec.strategy").CombinedOutput()
			return err == nil, nil
		})
	if err != nil {
		t.Fatalf("kubectl explain: %v\n%s", err, out)
	}
	for _, want := range []string{
		"Strategy says how old Machines are replaced by new ones",
		"RollingUpdate bounds a rolling update",
		"Type is RollingUpdate (the default), Recreate, OnDelete or InPlace",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("kubectl explain output lacks %q:\n%s", want, out)
		}
	}
}
