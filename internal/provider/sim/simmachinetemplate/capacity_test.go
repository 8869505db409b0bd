package simmachinetemplate

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/millwright-dev/millwright/api/infrastructure/v1alpha1"
	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/contract"
	"github.com/millwright-dev/millwright/internal/provider/sim"
)

// A template's status.capacity is its instance type's resources from the
// sim's catalog (sim.small when the providerSpec names none), and the
// MachineDeployment controller's reader (contract.TemplateCapacity) gets
// exactly those.
func TestCapacityIsTheInstanceTypes(t *testing.T) {
	startController(t)
	for _, tc := range []struct{ name, instanceType, want string }{
		{"named", `,"instanceType":"sim.large"`, "sim.large"},
		{"default", ``, sim.DefaultInstanceType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := createTemplate(t, newNamespace(t), "t", `{"region":"local","zones":["local-a"]`+tc.instanceType+`}`)
			want := catalog(t, tc.want)
			eventuallyCapacity(t, tmpl, want)

			ref := &v1alpha1.ContractReference{APIGroup: infrav1.GroupName, Kind: "SimMachineTemplate", Name: tmpl.Name}
			nt, err := contract.TemplateCapacity(context.Background(), testClient, tmpl.Namespace, ref)
			if err != nil {
				t.Fatal(err)
			}
			if nt == nil || !apiequality.Semantic.DeepEqual(nt.Capacity, want) {
				t.Fatalf("contract.TemplateCapacity = %+v, want capacity {%s}", nt, format(want))
			}
		})
	}
}

// The capacity follows the template's instance type. The API server keeps
// a template's providerSpec immutable, so a new instance type comes as a
// new template (here, under the same name); and a status.capacity that
// disagrees with the spec, as a hand edit or an older writer leaves it,
// is put right, resource names the instance type lacks included.
func TestCapacityFollowsTheInstanceType(t *testing.T) {
	startController(t)
	ctx := context.Background()
	ns := newNamespace(t)
	spec := func(it string) string { return `{"region":"local","zones":["local-a"],"instanceType":"` + it + `"}` }
	tmpl := createTemplate(t, ns, "t", spec("sim.medium"))
	eventuallyCapacity(t, tmpl, catalog(t, "sim.medium"))

	// If this ever succeeds, the controller must handle a template whose
	// instance type changes in place: test that instead of recreating.
	base := tmpl.DeepCopy()
	tmpl.Spec.Template.Spec.ProviderSpec = runtime.RawExtension{Raw: []byte(spec("sim.xlarge"))}
	if err := testClient.Patch(ctx, tmpl, client.MergeFrom(base)); !apierrors.IsInvalid(err) {
		t.Fatalf("changing a template's instanceType in place: got %v, want it refused as Invalid", err)
	}

	stale := catalog(t, "sim.small")
	stale["nvidia.com/gpu"] = resource.MustParse("1")
	setCapacity(t, tmpl, stale)
	eventuallyCapacity(t, tmpl, catalog(t, "sim.medium"))

	if err := testClient.Delete(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := testClient.Get(ctx, client.ObjectKeyFromObject(tmpl), &infrav1.SimMachineTemplate{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("waiting for the template to be deleted: %v", err)
	}
	tmpl = createTemplate(t, ns, "t", spec("sim.xlarge"))
	eventuallyCapacity(t, tmpl, catalog(t, "sim.xlarge"))
}

// A template of an instance type the sim does not have gets no capacity —
// not even one written before — and a Warning Event saying why.
func TestUnknownInstanceTypeLeavesCapacityEmpty(t *testing.T) {
	startController(t)
	tmpl := createTemplate(t, newNamespace(t), "t", `{"region":"local","zones":["local-a"],"instanceType":"sim.huge"}`)

	var got []string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list := &eventsv1.EventList{}
		if err := testClient.List(ctx, list, client.InNamespace(tmpl.Namespace)); err != nil {
			return false, err
		}
		got = got[:0]
		for _, ev := range list.Items {
			got = append(got, fmt.Sprintf("%s %s %s/%s: %s", ev.Type, ev.Reason, ev.Regarding.Kind, ev.Regarding.Name, ev.Note))
			if ev.Type == corev1.EventTypeWarning && ev.Reason == infrav1.FailureReasonInvalidConfiguration &&
				ev.Regarding.UID == tmpl.UID && strings.Contains(ev.Note, `unknown instance type "sim.huge"`) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("waiting for a Warning Event about the instance type: %v; events: %q", err, got)
	}
	if err := testClient.Get(context.Background(), client.ObjectKeyFromObject(tmpl), tmpl); err != nil {
		t.Fatal(err)
	}
	if len(tmpl.Status.Capacity) != 0 {
		t.Fatalf("status.capacity = {%s}, want none", format(tmpl.Status.Capacity))
	}

	// Left empty, not merely left alone: a capacity written by someone
	// else is removed.
	setCapacity(t, tmpl, catalog(t, sim.DefaultInstanceType))
	eventuallyCapacity(t, tmpl, nil)
}

var nsSeq atomic.Int64

// newNamespace creates a namespace of the test's own.
func newNamespace(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("smt%d-%s", nsSeq.Add(1), strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")))
	name = strings.TrimRight(name[:min(len(name), 60)], "-")
	if err := testClient.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	return name
}

func createTemplate(t *testing.T, ns, name, providerSpec string) *infrav1.SimMachineTemplate {
	t.Helper()
	tmpl := &infrav1.SimMachineTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: infrav1.SimMachineTemplateSpec{Template: infrav1.SimMachineTemplateResource{
			Spec: infrav1.SimMachineSpec{ProviderSpec: runtime.RawExtension{Raw: []byte(providerSpec)}},
		}},
	}
	if err := testClient.Create(context.Background(), tmpl); err != nil {
		t.Fatal(err)
	}
	return tmpl
}

// catalog is the capacity of a Node of the named instance type.
func catalog(t *testing.T, instanceType string) corev1.ResourceList {
	t.Helper()
	it, ok := sim.LookupInstanceType(instanceType)
	if !ok {
		t.Fatalf("the sim has no instance type %q", instanceType)
	}
	return it.Resources()
}

// setCapacity writes status.capacity as someone other than the controller.
func setCapacity(t *testing.T, tmpl *infrav1.SimMachineTemplate, capacity corev1.ResourceList) {
	t.Helper()
	if err := testClient.Get(context.Background(), client.ObjectKeyFromObject(tmpl), tmpl); err != nil {
		t.Fatal(err)
	}
	base := tmpl.DeepCopy()
	tmpl.Status.Capacity = capacity
	if err := testClient.Status().Patch(context.Background(), tmpl, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
}

// eventuallyCapacity polls the template until its status.capacity is want
// (none, for nil), resource names and quantities alike.
func eventuallyCapacity(t *testing.T, tmpl *infrav1.SimMachineTemplate, want corev1.ResourceList) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := testClient.Get(ctx, client.ObjectKeyFromObject(tmpl), tmpl)
		return err == nil && apiequality.Semantic.DeepEqual(tmpl.Status.Capacity, want), err
	})
	if err != nil {
		t.Fatalf("waiting for status.capacity {%s}: %v; it is {%s}", format(want), err, format(tmpl.Status.Capacity))
	}
}

// format shows a resource list as "cpu=2, memory=4Gi", sorted, for
// failure messages (a Quantity's %v is its internal fields).
func format(l corev1.ResourceList) string {
	parts := make([]string, 0, len(l))
	for name, q := range l {
		parts = append(parts, string(name)+"="+q.String())
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
