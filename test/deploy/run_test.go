package deploy_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// The manager and the sim, started with the Deployment's own flags (only
// the socket path, the listen addresses and the kubeconfig changed for a
// process outside a pod) and authenticated as the ServiceAccount with a
// token of its own, do the whole job under config/rbac: leader election,
// a MachineDeployment's MachineSet and Machine, a bootstrap token created
// and deleted in kube-system, the VM's Node registered (kwok plays its
// kubelet), and on scale-down the cordon, the drain of a pod with a
// persistent volume (its eviction, then the wait for the volume, found
// through its claim, to detach), the VM's and the Node's deletion — with
// Events from every controller and not one request forbidden.
func TestManagerRunsUnderItsServiceAccount(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	applyRBAC(ctx, t)
	dir := t.TempDir()
	managerBin, simBin := build(ctx, t, dir)
	kwokDir := filepath.Join(dir, "kwok")
	if err := os.Mkdir(kwokDir, 0o700); err != nil {
		t.Fatal(err)
	}
	kwok, err := env.StartKwok(ctx, kwokDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kwok.Stop() })
	kubeconfig := serviceAccountKubeconfig(ctx, t, dir)

	_, objs := render(t, "default")
	d := &appsv1.Deployment{}
	testenv.FromUnstructured(t, testenv.FindObject(t, objs, "Deployment", "millwright-manager"), d)
	spec := d.Spec.Template.Spec
	sock := filepath.Join(dir, "sim.sock")
	health, metrics := testenv.FreeAddr(t), testenv.FreeAddr(t)
	simArgs := withFlags(t, testenv.Container(t, spec.InitContainers, "sim").Args, map[string]string{
		"--endpoint":      "unix://" + sock,
		"--admin-address": testenv.FreeAddr(t),
	}, "--kubeconfig="+kubeconfig)
	managerArgs := withFlags(t, testenv.Container(t, spec.Containers, "manager").Args, map[string]string{
		"--driver":                    "sim=unix://" + sock,
		"--health-probe-bind-address": health,
		"--metrics-bind-address":      metrics,
	}, "--kubeconfig="+kubeconfig,
		// In a pod the Lease goes to the pod's namespace by itself.
		"--leader-elect-namespace="+systemNS)
	sim := start(t, "millwright-sim", simBin, simArgs...)
	manager := start(t, "millwright-manager", managerBin, managerArgs...)

	testenv.Eventually(t, time.Minute, "the manager to be ready (/readyz)", func() (bool, error) {
		for _, p := range []*proc{sim, manager} {
			if p.HasExited() {
				t.Fatalf("%s exited:\n%s", p.Name, p.LogTail(30))
			}
		}
		code, body, err := testenv.HTTPGet("http://" + health + "/readyz")
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("/readyz answered %d: %s", code, body)
		}
		return code == http.StatusOK, err
	})
	if code, _, err := testenv.HTTPGet("http://" + metrics + "/metrics"); code != http.StatusOK {
		t.Errorf("/metrics on the Deployment's metrics address answered %d (%v)", code, err)
	}
	lease := &coordinationv1.Lease{}
	testenv.Eventually(t, time.Minute, "the manager to hold its Lease", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: systemNS, Name: "millwright-manager.machine.millwright.dev"}, lease)
		return err == nil && ptr.Deref(lease.Spec.HolderIdentity, "") != "", err
	})
	checkTokenBootstrap(ctx, t)

	// A fleet of one, whose user data asks for a bootstrap token.
	ns := "fleet"
	create(ctx, t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	create(ctx, t, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "userdata", Namespace: ns},
		StringData: map[string]string{"userData": "kubeadm join --token <<BOOTSTRAP_TOKEN>> --node-name <<MACHINE_NAME>>"},
	})
	create(ctx, t, &v1alpha1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Name: "sim", Namespace: ns},
		Spec: v1alpha1.MachineClassSpec{
			Provider:     "sim",
			ProviderSpec: runtime.RawExtension{Raw: []byte(`{"region":"local","zones":["local-a"]}`)},
			SecretRef:    &corev1.SecretReference{Name: "userdata"},
		},
	})
	md := &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "pool", Namespace: ns},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas: 1,
			Selector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"pool": "deploy"}},
			Template: v1alpha1.MachineTemplateSpec{
				Metadata: v1alpha1.ObjectMeta{Labels: map[string]string{"pool": "deploy"}},
				Spec:     v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: "sim"}},
			},
		},
	}
	create(ctx, t, md)

	machine := &v1alpha1.Machine{}
	oneRunning := func(what string) {
		t.Helper()
		testenv.Eventually(t, 2*time.Minute, what, func() (bool, error) {
			list := &v1alpha1.MachineList{}
			if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
				return false, err
			}
			if len(list.Items) != 1 {
				return false, fmt.Errorf("%d Machines", len(list.Items))
			}
			*machine = list.Items[0]
			if machine.Status.Phase != v1alpha1.PhaseRunning || machine.Status.NodeRef == nil || !machine.DeletionTimestamp.IsZero() {
				return false, fmt.Errorf("Machine %s: phase %q, deleting %v, last operation %+v", machine.Name, machine.Status.Phase, !machine.DeletionTimestamp.IsZero(), machine.Status.LastOperation)
			}
			return true, nil
		})
	}
	oneRunning("the deployment's Machine to be Running")
	// The token was created (the VM could not be made without it) and,
	// the Node having joined, deleted.
	testenv.Eventually(t, 30*time.Second, "the bootstrap token to be deleted", func() (bool, error) {
		secrets := &corev1.SecretList{}
		if err := env.Client.List(ctx, secrets, client.InNamespace("kube-system")); err != nil {
			return false, err
		}
		for _, s := range secrets.Items {
			if s.Type == corev1.SecretTypeBootstrapToken && s.Annotations[v1alpha1.NodeMachineAnnotation] == machine.Name {
				return false, fmt.Errorf("bootstrap token %s still exists", s.Name)
			}
		}
		return true, nil
	})

	// A routine deletion emits no Event (docs/machine-phases.md), so the
	// machine controller speaks here: the Machine preserved for a moment
	// (PreservationStarted, then PreservationEnded).
	for _, preserve := range []*string{ptr.To(v1alpha1.PreserveNow), nil} {
		data := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null}}}`, v1alpha1.PreserveAnnotation)
		if preserve != nil {
			data = fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.PreserveAnnotation, *preserve)
		}
		if err := env.Client.Patch(ctx, machine, client.RawPatch(types.MergePatchType, data)); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 30*time.Second, fmt.Sprintf("the Machine's Preserved condition to follow its annotation (%v)", preserve != nil), func() (bool, error) {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(machine), machine); err != nil {
				// Once the preservation ends, the set is one Machine over
				// and may delete this one: gone, it is not preserved.
				return preserve == nil && apierrors.IsNotFound(err), client.IgnoreNotFound(err)
			}
			c := meta.FindStatusCondition(machine.Status.Conditions, v1alpha1.PreservedCondition)
			return (c != nil && c.Status == metav1.ConditionTrue) == (preserve != nil), nil
		})
	}
	// A preserved Machine is not one of the replicas (docs/preservation.md):
	// its set created a replacement, and scaled back to one when the
	// preservation ended. Either Machine may be the one left.
	oneRunning("the deployment back to one Running Machine after the preservation")
	nodeName := machine.Status.NodeRef.Name

	// A pod with a persistent volume of the sim's CSI driver on the Node,
	// the volume attached: the drain reads the pod's claim and volume, asks
	// the driver for the volume's ID, evicts the pod and waits for the
	// volume to detach.
	volumeID := "vol-" + ns
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-data"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "sim.millwright.dev", VolumeHandle: volumeID}},
		},
	}
	create(ctx, t, pv)
	create(ctx, t, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			VolumeName:       pv.Name,
			StorageClassName: ptr.To(""),
		},
	})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName:   nodeName,
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"},
			}}},
		},
	}
	create(ctx, t, pod)
	testenv.Eventually(t, 30*time.Second, "the pod to run (kwok)", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod)
		return err == nil && pod.Status.Phase == corev1.PodRunning, err
	})
	setAttached(ctx, t, nodeName, corev1.AttachedVolume{Name: corev1.UniqueVolumeName("kubernetes.io/csi/sim.millwright.dev^" + volumeID)})

	// Scale to zero: cordon, drain (evict, wait for the volume), delete
	// the VM and the Node.
	base := md.DeepCopy()
	md.Spec.Replicas = 0
	if err := env.Client.Patch(ctx, md, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the pod evicted and the drain waiting for its volume", func() (bool, error) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(machine), machine); err != nil {
			return false, err
		}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}); !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("pod still there (err %v); Machine's last operation %+v", err, machine.Status.LastOperation)
		}
		d := machine.Status.Deletion
		if d == nil || d.Drain == nil || d.Drain.VolumeWait == nil || !slices.Contains(d.Drain.VolumeWait.VolumeIDs, volumeID) {
			return false, fmt.Errorf("Machine deletion status %+v, last operation %+v", d, machine.Status.LastOperation)
		}
		return true, nil
	})
	setAttached(ctx, t, nodeName)
	testenv.Eventually(t, time.Minute, "the Machine and its Node to be gone", func() (bool, error) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(machine), machine); !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("Machine still there (err %v), last operation %+v", err, machine.Status.LastOperation)
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: nodeName}, &corev1.Node{}); !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("Node still there (err %v)", err)
		}
		return true, nil
	})

	// Events: every controller's (events.k8s.io), and leader election's (core).
	testenv.Eventually(t, 30*time.Second, "Events from each controller", func() (bool, error) {
		events := &eventsv1.EventList{}
		if err := env.Client.List(ctx, events, client.InNamespace(ns)); err != nil {
			return false, err
		}
		var reporters []string
		for _, e := range events.Items {
			reporters = append(reporters, e.ReportingController)
		}
		for _, want := range []string{"machine-controller", "machineset-controller", "machinedeployment-controller"} {
			if !slices.Contains(reporters, want) {
				return false, fmt.Errorf("no Event from %s (have %q)", want, reporters)
			}
		}
		return true, nil
	})
	testenv.Eventually(t, 30*time.Second, "the leader election Event", func() (bool, error) {
		events := &corev1.EventList{}
		if err := env.Client.List(ctx, events, client.InNamespace(systemNS)); err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Reason == "LeaderElection" && e.InvolvedObject.Kind == "Lease" {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d Events, none about the Lease", len(events.Items))
	})

	// Some refusals are only logged (an Event that could not be written):
	// none may have happened.
	for _, p := range []*proc{manager, sim} {
		if lines := p.Grep("forbidden"); len(lines) > 0 {
			t.Errorf("%s was refused requests:\n%s", p.Name, strings.Join(lines, "\n"))
		}
	}
}

// setAttached sets the Node's status.volumesAttached, as the attach/detach
// controller would.
func setAttached(ctx context.Context, t *testing.T, nodeName string, volumes ...corev1.AttachedVolume) {
	t.Helper()
	node := &corev1.Node{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
		t.Fatal(err)
	}
	base := node.DeepCopy()
	node.Status.VolumesAttached = volumes
	if err := env.Client.Status().Patch(ctx, node, client.MergeFrom(base)); err != nil {
		t.Fatalf("setting Node %s's attached volumes: %v", nodeName, err)
	}
}

// build compiles both programs into dir, as `make build` does.
func build(ctx context.Context, t *testing.T, dir string) (manager, sim string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+string(filepath.Separator), "./cmd/millwright-manager", "./cmd/millwright-sim")
	cmd.Dir = env.Root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the binaries: %v\n%s", err, out)
	}
	return filepath.Join(dir, "millwright-manager"), filepath.Join(dir, "millwright-sim")
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates as the
// ServiceAccount, with a token the API server issued for it, as a pod's.
func serviceAccountKubeconfig(ctx context.Context, t *testing.T, dir string) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: systemNS, Name: serviceAccount}}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if err := env.Client.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatalf("requesting a token for the ServiceAccount: %v", err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	cfg.AuthInfos[serviceAccount] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: serviceAccount}
	cfg.CurrentContext = "envtest"
	path := filepath.Join(dir, "serviceaccount.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// withFlags returns args with the values of the flags in set replaced,
// failing the test when args lacks one of them, and extra appended.
func withFlags(t *testing.T, args []string, set map[string]string, extra ...string) []string {
	t.Helper()
	out := make([]string, 0, len(args)+len(extra))
	seen := map[string]bool{}
	for _, a := range args {
		k, _, _ := strings.Cut(a, "=")
		if v, ok := set[k]; ok {
			a, seen[k] = k+"="+v, true
		}
		out = append(out, a)
	}
	for k := range set {
		if !seen[k] {
			t.Fatalf("the Deployment does not pass %s (args %q)", k, args)
		}
	}
	return append(out, extra...)
}

func create(ctx context.Context, t *testing.T, obj client.Object) {
	t.Helper()
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// proc is one program under test (see testenv.Process).
type proc = testenv.Process

// start starts bin with args; the test's cleanup kills its process group.
func start(t *testing.T, name, bin string, args ...string) *proc {
	t.Helper()
	return testenv.StartProcess(t, name, bin, args...)
}
