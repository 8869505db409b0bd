package nodeagent

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/bootstraptoken"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// TestInPlaceUpdate drives the node side of an in-place update against a
// real control plane (NodeRestriction on, the agent authenticated as
// system:node:<name>), with the reboot replaced by a function that tells
// the test, which then "boots" the machine by starting a second agent on
// the same state device with an empty certificate directory (the tmpfs a
// reboot empties):
//
//  1. the Node reports the user data's version (the Machine's spec.version);
//  2. a version that is not one, and one newer than the API server, are
//     refused: update=failed with the reason, no reboot;
//  3. a newer allowed version: update=in-progress, the version recorded on
//     the state device, Ready=False (NodeAgentUpdating), the reboot asked
//     for; stopping that agent does not overwrite the Ready reason;
//  4. after the "reboot", with the bootstrap token deleted: the Node
//     reports the new version, Ready, update=succeeded, the same
//     providerID, and no second CSR was made;
//  5. update=in-progress with a version the node does not run (the update
//     did not take): update=failed.
func TestInPlaceUpdate(t *testing.T) {
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(cluster.RESTConfig())
	sv, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	server := version.MustParseGeneric(sv.GitVersion)
	oldV := fmt.Sprintf("v%d.%d.0", server.Major(), server.Minor()-1)
	newV := fmt.Sprintf("v%d.%d.7", server.Major(), server.Minor())
	tooNew := fmt.Sprintf("v%d.%d.0", server.Major(), server.Minor()+1)

	const node, providerID = "vm-update", "millwright-libvirt://default/vm-update"
	ud, md, token := seedVersion(t, cs, node, providerID, oldV)
	cfg, err := ParseSeed(ud, md)
	if err != nil {
		t.Fatal(err)
	}
	dev := stateDevice(t)
	rebooted := make(chan struct{})
	first, stopFirst := context.WithCancel(ctx)
	firstDone := make(chan error, 1)
	go func() {
		firstDone <- Run(first, cfg, Options{CertDir: t.TempDir(), StatePath: dev, RetryInterval: 200 * time.Millisecond, Logf: t.Logf,
			Reboot: func() error { close(rebooted); return nil }})
	}()
	defer stopFirst()

	getNode := func() *corev1.Node {
		t.Helper()
		n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	testenv.Eventually(t, 2*time.Minute, "the Node to be Ready with the user data's version", func() (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if testenv.NodeReady(n) && n.Status.NodeInfo.KubeletVersion == oldV {
			return true, nil
		}
		return false, fmt.Errorf("kubeletVersion %q, conditions %+v", n.Status.NodeInfo.KubeletVersion, n.Status.Conditions)
	})
	if st, err := ReadState(dev); err != nil || st == nil || st.NodeName != node || len(st.Certificate) == 0 || len(st.Key) == 0 {
		t.Fatalf("the state device after the join holds %+v, %v; want the node's credentials", st, err)
	}

	// label asks for an update to v (and clears the previous message, as
	// Millwright does when it starts one).
	label := func(phase, v string) {
		t.Helper()
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q,%q:%q},"annotations":{%q:null}}}`,
			v1alpha1.NodeUpdateLabel, phase, v1alpha1.NodeUpdateVersionLabel, v, v1alpha1.NodeUpdateMessageAnnotation)
		if _, err := cs.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitPhase := func(phase string) *corev1.Node {
		t.Helper()
		var n *corev1.Node
		testenv.Eventually(t, time.Minute, "update="+phase, func() (bool, error) {
			var err error
			n, err = cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if n.Labels[v1alpha1.NodeUpdateLabel] == phase {
				return true, nil
			}
			return false, fmt.Errorf("labels %v annotations %v", n.Labels, n.Annotations)
		})
		return n
	}
	for _, tc := range []struct{ v, why string }{
		{"v1.36", "not a Kubernetes version"},
		{tooNew, "newer than the API server"},
	} {
		label(v1alpha1.NodeUpdateReady, tc.v)
		n := waitPhase(v1alpha1.NodeUpdateFailed)
		if msg := n.Annotations[v1alpha1.NodeUpdateMessageAnnotation]; !strings.Contains(msg, tc.why) {
			t.Errorf("update to %s failed with message %q, want it to say %q", tc.v, msg, tc.why)
		}
		select {
		case <-rebooted:
			t.Fatalf("the agent rebooted for the refused version %s", tc.v)
		default:
		}
	}

	// The token goes, as the provider deletes it once the Node joined.
	id, _, _ := bootstraptoken.Split(token)
	key := bootstraptoken.Key(id)
	if err := cs.CoreV1().Secrets(key.Namespace).Delete(ctx, key.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	label(v1alpha1.NodeUpdateReady, newV)
	testenv.Eventually(t, time.Minute, "the agent to reboot", func() (bool, error) {
		select {
		case <-rebooted:
			return true, nil
		default:
			return false, nil
		}
	})
	n := getNode()
	if got := n.Labels[v1alpha1.NodeUpdateLabel]; got != v1alpha1.NodeUpdateInProgress {
		t.Errorf("update=%s when the agent rebooted, want %s", got, v1alpha1.NodeUpdateInProgress)
	}
	if msg, ok := n.Annotations[v1alpha1.NodeUpdateMessageAnnotation]; ok {
		t.Errorf("the message annotation %q is still there during the update", msg)
	}
	if st, err := ReadState(dev); err != nil || st == nil || st.Version != newV {
		t.Errorf("the state device when the agent rebooted holds version %q (%v); want %s", versionOf(st), err, newV)
	}
	readyIs := func(n *corev1.Node, status corev1.ConditionStatus, reason string) bool {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == status && c.Reason == reason
			}
		}
		return false
	}
	if !readyIs(n, corev1.ConditionFalse, "NodeAgentUpdating") {
		t.Errorf("Ready when the agent rebooted: %+v, want False NodeAgentUpdating", n.Status.Conditions)
	}
	stopFirst()
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	if n := getNode(); !readyIs(n, corev1.ConditionFalse, "NodeAgentUpdating") {
		t.Errorf("Ready after the rebooting agent stopped: %+v, want it left at NodeAgentUpdating", n.Status.Conditions)
	}

	// The boot: a new agent, an empty certificate directory, the same
	// state device, no bootstrap token.
	second, stopSecond := context.WithCancel(ctx)
	secondDone := make(chan error, 1)
	go func() {
		secondDone <- Run(second, cfg, Options{CertDir: t.TempDir(), StatePath: dev, RetryInterval: 200 * time.Millisecond, Logf: t.Logf,
			Reboot: func() error { t.Error("the agent rebooted after its update"); return nil }})
	}()
	defer func() {
		stopSecond()
		if err := <-secondDone; err != nil {
			t.Error(err)
		}
	}()
	n = waitPhase(v1alpha1.NodeUpdateSucceeded)
	if n.Status.NodeInfo.KubeletVersion != newV || !testenv.NodeReady(n) || n.Spec.ProviderID != providerID {
		t.Errorf("after the update: kubeletVersion %q (want %s), Ready %v, providerID %q", n.Status.NodeInfo.KubeletVersion, newV, testenv.NodeReady(n), n.Spec.ProviderID)
	}
	csrs, err := cs.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	made := 0
	for _, c := range csrs.Items {
		if c.Spec.Username == "system:bootstrap:"+id {
			made++
		}
	}
	if made != 1 {
		t.Errorf("%d CSRs by system:bootstrap:%s, want 1: the boot after the update bootstrapped again", made, id)
	}

	// An update that did not take: in-progress with a version the node
	// does not run, found at boot.
	label(v1alpha1.NodeUpdateInProgress, oldV)
	n = waitPhase(v1alpha1.NodeUpdateFailed)
	if msg := n.Annotations[v1alpha1.NodeUpdateMessageAnnotation]; !strings.Contains(msg, "did not take") {
		t.Errorf("update=in-progress to a version the node does not run failed with %q", msg)
	}
}

func versionOf(s *State) string {
	if s == nil {
		return "<no state>"
	}
	return s.Version
}
