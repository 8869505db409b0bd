package simserver

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/millwright-dev/millwright/api/infrastructure/v1alpha1"
	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/testenv"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// With --infra-controller, millwright-sim provisions a SimMachine in the
// cloud its gRPC driver serves: the driver reports the very VM, keyed by
// the owner Machine, that the SimMachine names.
func TestInfraControllerSharesTheCloud(t *testing.T) {
	e, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	dir := t.TempDir()
	o := NewOptions()
	o.Endpoint = "unix://" + filepath.Join(dir, "sim.sock")
	o.AdminAddress = ""
	o.NodeMode = "builtin"
	o.InfraController = true
	if o.Kubeconfig, err = e.WriteKubeconfig(dir); err != nil {
		t.Fatal(err)
	}
	runSim(t, o)

	ctx := t.Context()
	scheme := testenv.Scheme()
	if err := infrav1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(e.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	spec := `{"region":"local","zones":["local-a"]}`
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "infra-data"}, Data: map[string][]byte{"value": []byte("boot")}}
	sm := &infrav1.SimMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "infra-m1"},
		Spec:       infrav1.SimMachineSpec{ProviderSpec: runtime.RawExtension{Raw: []byte(spec)}},
	}
	m := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "infra-m1"},
		Spec: v1alpha1.MachineSpec{
			InfrastructureRef: &v1alpha1.ContractReference{APIGroup: infrav1.GroupName, Kind: "SimMachine", Name: sm.Name},
			Bootstrap:         v1alpha1.Bootstrap{DataSecretName: ptr.To(secret.Name)},
		},
	}
	for _, obj := range []client.Object{secret, sm, m} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	base := sm.DeepCopy()
	sm.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Machine", Name: m.Name, UID: m.UID, Controller: ptr.To(true)}}
	if err := c.Patch(ctx, sm, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return sm.Status.Ready, c.Get(ctx, client.ObjectKeyFromObject(sm), sm)
	})
	if err != nil {
		t.Fatalf("SimMachine not ready: %v; status %+v", err, sm.Status)
	}
	got, err := dial(t, o.Endpoint).GetMachineStatus(ctx, &driver.GetMachineStatusRequest{Machine: m, MachineClass: simClass("any", spec)})
	if err != nil {
		t.Fatalf("the driver does not know the SimMachine's VM: %v", err)
	}
	if got.ProviderID != ptr.Deref(sm.Spec.ProviderID, "") {
		t.Errorf("the driver reports VM %q; the SimMachine names %q", got.ProviderID, ptr.Deref(sm.Spec.ProviderID, ""))
	}

	// The VM's Node registers and turns Ready, the sim reading it from
	// its Node cache.
	var node corev1.Node
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Name: m.Name}, &node)
		return err == nil && node.Spec.ProviderID == got.ProviderID && testenv.NodeReady(&node), client.IgnoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("the VM's Node is not Ready: %v; Node %+v", err, node.Status.Conditions)
	}
}
