package machineset_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// contractSet creates a MachineSet of replicas whose template references
// the infrastructure template infraTemplate and the bootstrap template
// bootTemplate (kinds TplMachineTemplate and TplConfigTemplate).
func contractSet(h *controllertest.Harness, name string, replicas int32, infraTemplate, bootTemplate string) *v1alpha1.MachineSet {
	h.T.Helper()
	labels := map[string]string{"set": h.Prefix + name}
	ms := &v1alpha1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Name: h.Prefix + name, Namespace: h.NS},
		Spec: v1alpha1.MachineSetSpec{
			Replicas: replicas,
			Selector: v1alpha1.LabelSelector{MatchLabels: labels},
			Template: v1alpha1.MachineTemplateSpec{
				Metadata: v1alpha1.ObjectMeta{Labels: labels},
				Spec: v1alpha1.MachineSpec{
					InfrastructureRef: &v1alpha1.ContractReference{APIGroup: controllertest.ProviderGroup, Kind: "TplMachineTemplate", Name: infraTemplate},
					Bootstrap: v1alpha1.Bootstrap{ConfigRef: &v1alpha1.ContractReference{
						APIGroup: controllertest.ProviderGroup, Kind: "TplConfigTemplate", Name: bootTemplate}},
				},
			},
		},
	}
	h.Create(ms)
	return ms
}

// template creates a provider template whose spec.template carries spec.
func template(h *controllertest.Harness, kind, name string, spec map[string]any) {
	h.T.Helper()
	u := controllertest.ProviderObject(kind, h.NS, name)
	u.Object["spec"] = map[string]any{"template": map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"from": "template"}},
		"spec":     spec,
	}}
	h.Create(u)
}

func registerTemplateKinds(t *testing.T) {
	for _, kind := range []string{"TplMachine", "TplMachineTemplate", "TplConfig", "TplConfigTemplate"} {
		controllertest.RegisterProviderKind(t, kind, "v1alpha1")
	}
}

// A Machine of a MachineSet gets its own InfraMachine and bootstrap
// config, cloned from the templates, named after it and adopted by it.
func TestTemplatesClonedPerMachine(t *testing.T) {
	h := newHarness(t)
	registerTemplateKinds(t)
	template(h, "TplMachineTemplate", "small", map[string]any{"size": "small"})
	template(h, "TplConfigTemplate", "join", map[string]any{"mode": "token"})
	ms := contractSet(h, "web", 1, "small", "join")

	var machines []v1alpha1.Machine
	h.Eventually(20*time.Second, "a Machine", func() (bool, error) {
		list := &v1alpha1.MachineList{}
		err := controllertest.Env.Client.List(context.Background(), list, client.InNamespace(h.NS))
		machines = list.Items
		return len(machines) == 1, err
	})
	for _, m := range machines {
		infra := m.Spec.InfrastructureRef
		boot := m.Spec.Bootstrap.ConfigRef
		if infra == nil || infra.Kind != "TplMachine" || infra.Name != m.Name || boot == nil || boot.Kind != "TplConfig" || boot.Name != m.Name {
			t.Fatalf("Machine %s references %+v and %+v; want its own TplMachine and TplConfig", m.Name, infra, boot)
		}
		for kind, want := range map[string]string{"TplMachine": "small", "TplConfig": "token"} {
			var obj *unstructured.Unstructured
			h.Eventually(10*time.Second, kind+" adopted by "+m.Name, func() (bool, error) {
				var err error
				obj, err = h.GetProviderObject(kind, m.Name)
				ref := metav1.GetControllerOf(obj)
				return err == nil && ref != nil && ref.UID == m.UID, client.IgnoreNotFound(err)
			})
			spec, _, _ := unstructured.NestedStringMap(obj.Object, "spec")
			a := obj.GetAnnotations()
			if (spec["size"] != want && spec["mode"] != want) || obj.GetLabels()["from"] != "template" ||
				obj.GetLabels()[v1alpha1.MachineSetNameLabel] != ms.Name ||
				a[v1alpha1.ClonedFromNameAnnotation] == "" || a[v1alpha1.ClonedFromGroupKindAnnotation] != kind+"Template."+controllertest.ProviderGroup {
				t.Errorf("%s %s: spec %v labels %v annotations %v", kind, m.Name, spec, obj.GetLabels(), a)
			}
		}
	}
}

// When the second clone cannot be made, the first is deleted and no
// Machine is created; the MachineSet says why.
func TestFailedCloneCleansUp(t *testing.T) {
	h := newHarness(t)
	registerTemplateKinds(t)
	template(h, "TplMachineTemplate", "small", map[string]any{"size": "small"})
	ms := contractSet(h, "web", 1, "small", "missing")

	h.Eventually(20*time.Second, "a ReplicaFailure naming the missing template", func() (bool, error) {
		got := &v1alpha1.MachineSet{}
		err := controllertest.Env.Client.Get(context.Background(), client.ObjectKeyFromObject(ms), got)
		for _, c := range got.Status.Conditions {
			if c.Type == "ReplicaFailure" && c.Status == metav1.ConditionTrue {
				return true, err
			}
		}
		return false, err
	})
	machines := &v1alpha1.MachineList{}
	if err := controllertest.Env.Client.List(context.Background(), machines, client.InNamespace(h.NS)); err != nil || len(machines.Items) != 0 {
		t.Fatalf("Machines %d (%v); want none", len(machines.Items), err)
	}
	// Each retry clones the infrastructure template again before failing
	// on the bootstrap one, so a clone may exist for an instant; none may stay.
	h.Eventually(10*time.Second, "no TplMachine left behind", func() (bool, error) {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(controllertest.ProviderGroup + "/v1alpha1")
		list.SetKind("TplMachineList")
		err := controllertest.Env.Client.List(context.Background(), list, client.InNamespace(h.NS))
		return len(list.Items) == 0, err
	})
}
