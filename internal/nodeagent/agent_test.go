package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/millwright-dev/millwright/internal/bootstraptoken"
	"github.com/millwright-dev/millwright/internal/localcluster"
	"github.com/millwright-dev/millwright/internal/provider/tokenbootstrap"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// cluster is a real control plane: approving and signing node CSRs is
// kube-controller-manager's job, which envtest does not run.
var cluster *localcluster.Cluster

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	c, err := localcluster.Start(ctx, localcluster.Options{})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cluster = c
	code := m.Run()
	if err := c.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the cluster:", err)
	}
	os.Exit(code)
}

// seed makes a bootstrap token Secret as the TokenBootstrapConfig
// provider does and returns the NoCloud seed a VM for node would get:
// the provider's own user data, and meta-data.
func seed(t *testing.T, cs kubernetes.Interface, node, providerID string) (userData, metaData []byte, token string) {
	t.Helper()
	return seedVersion(t, cs, node, providerID, "")
}

// seedVersion is seed for a Machine whose spec.version is version.
func seedVersion(t *testing.T, cs kubernetes.Interface, node, providerID, version string) (userData, metaData []byte, token string) {
	t.Helper()
	id := bootstraptoken.ID(types.UID("uid-" + node))
	secret, err := bootstraptoken.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	s := bootstraptoken.Build(bootstraptoken.Spec{ID: id, Secret: secret, Expiration: time.Now().Add(time.Hour), Description: "node agent test"})
	if _, err := cs.CoreV1().Secrets(s.Namespace).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token = bootstraptoken.Token(id, secret)
	rc := cluster.RESTConfig()
	userData, err = tokenbootstrap.UserData(tokenbootstrap.JoinData{Server: rc.Host, CA: rc.CAData, Token: token, NodeName: node, Version: version})
	if err != nil {
		t.Fatal(err)
	}
	metaData = fmt.Appendf(nil, "instance-id: uid-%s\nlocal-hostname: %s\nprovider-id: %s\n", node, node, providerID)
	return userData, metaData, token
}

func TestJoin(t *testing.T) {
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(cluster.RESTConfig())
	const node, providerID = "vm-1", "millwright-libvirt://default/vm-1"
	ud, md, token := seed(t, cs, node, providerID)
	cfg, err := ParseSeed(ud, md)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.NodeName != node || cfg.ProviderID != providerID || cfg.Token != token || cfg.Server != cluster.APIServerURL() {
		t.Fatalf("ParseSeed = %+v", cfg)
	}

	opts := Options{CertDir: t.TempDir(), LeaseDuration: 4 * time.Second, Logf: t.Logf}
	joinCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	a, err := Join(joinCtx, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("the CSR was auto-approved and issued", func(t *testing.T) {
		id, _, _ := bootstraptoken.Split(token)
		csrs, err := cs.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var mine []certificatesv1.CertificateSigningRequest
		for _, c := range csrs.Items {
			if c.Spec.Username == "system:bootstrap:"+id {
				mine = append(mine, c)
			}
		}
		if len(mine) != 1 {
			t.Fatalf("%d CSRs by system:bootstrap:%s, want 1", len(mine), id)
		}
		c := mine[0]
		if c.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
			t.Errorf("signer %s", c.Spec.SignerName)
		}
		approved := false
		for _, cond := range c.Status.Conditions {
			// The csrapproving controller's reason; a person's
			// `kubectl certificate approve` says KubectlApprove.
			if cond.Type == certificatesv1.CertificateApproved && cond.Status == corev1.ConditionTrue && cond.Reason == "AutoApproved" {
				approved = true
			}
		}
		if !approved || len(c.Status.Certificate) == 0 {
			t.Errorf("CSR %s: conditions %+v, %d bytes of certificate; want AutoApproved and issued", c.Name, c.Status.Conditions, len(c.Status.Certificate))
		}
	})

	t.Run("the Node carries the providerID, the real capacity and Ready", func(t *testing.T) {
		n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n.Spec.ProviderID != providerID {
			t.Errorf("providerID %q, want %q", n.Spec.ProviderID, providerID)
		}
		var si unix.Sysinfo_t
		if err := unix.Sysinfo(&si); err != nil {
			t.Fatal(err)
		}
		if got := n.Status.Capacity.Cpu().Value(); got != int64(runtime.NumCPU()) {
			t.Errorf("cpu capacity %d, want %d", got, runtime.NumCPU())
		}
		if got, want := n.Status.Capacity.Memory().Value(), int64(si.Totalram)*int64(si.Unit); got != want {
			t.Errorf("memory capacity %d, want %d", got, want)
		}
		// A test binary carries no module versions, so the version part
		// is v0.0.0 here; the built agent reports v1.<k8s.io/api minor>.
		if n.Status.NodeInfo.KubeletVersion != KubeletVersion() || !strings.HasSuffix(KubeletVersion(), "+millwright-node-agent") {
			t.Errorf("kubeletVersion %q, KubeletVersion() %q", n.Status.NodeInfo.KubeletVersion, KubeletVersion())
		}
		if !testenv.NodeReady(n) {
			t.Errorf("Node not Ready: %+v", n.Status.Conditions)
		}
	})

	hbCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- a.Heartbeat(hbCtx) }()

	t.Run("the Lease is renewed", func(t *testing.T) {
		var first time.Time
		testenv.Eventually(t, time.Minute, "the Lease to be created", func() (bool, error) {
			l, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != node || len(l.OwnerReferences) != 1 || l.OwnerReferences[0].Name != node {
				return false, fmt.Errorf("Lease holder %v owners %v", l.Spec.HolderIdentity, l.OwnerReferences)
			}
			first = l.Spec.RenewTime.Time
			return true, nil
		})
		testenv.Eventually(t, time.Minute, "the Lease to be renewed", func() (bool, error) {
			l, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, node, metav1.GetOptions{})
			return err == nil && l.Spec.RenewTime.After(first), err
		})
	})

	t.Run("on stop the Node goes NotReady", func(t *testing.T) {
		stop()
		select {
		case err := <-stopped:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Heartbeat did not return within 30s of its context ending")
		}
		n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkStopped(t, n, "after stop")
	})

	t.Run("the node's credentials reach no other Node", func(t *testing.T) {
		other := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "not-" + node}}
		_, err := a.Client().CoreV1().Nodes().Create(ctx, other, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), "forbidden") {
			t.Errorf("creating another Node as system:node:%s: %v, want forbidden (NodeRestriction)", node, err)
		}
	})
}

func TestWrongToken(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(cluster.RESTConfig())
	ud, md, token := seed(t, cs, "vm-wrong", "millwright-libvirt://default/vm-wrong")
	cfg, err := ParseSeed(ud, md)
	if err != nil {
		t.Fatal(err)
	}
	id, _, _ := bootstraptoken.Split(token)
	cfg.Token = bootstraptoken.Token(id, "0123456789abcdef")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err = Join(ctx, cfg, Options{CertDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "refused the bootstrap token") {
		t.Fatalf("Join with a wrong token: %v, want the API server's refusal", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Join with a wrong token waited for its deadline: %v", err)
	}
}

// TestRunRetriesRegistrationWithItsCertificate: a registration that fails
// (a Node of that name with another providerID is in the way) is retried
// with the certificate already issued, not by bootstrapping again, which
// would fail once the bootstrap token is gone.
func TestRunRetriesRegistrationWithItsCertificate(t *testing.T) {
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(cluster.RESTConfig())
	const node, providerID = "vm-retry", "millwright-libvirt://default/vm-retry"
	ud, md, token := seed(t, cs, node, providerID)
	cfg, err := ParseSeed(ud, md)
	if err != nil {
		t.Fatal(err)
	}
	squatter := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: corev1.NodeSpec{ProviderID: "someone-else://" + node}}
	if _, err := cs.CoreV1().Nodes().Create(ctx, squatter, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The squatter goes only once a registration has failed.
	failed := make(chan struct{})
	var once sync.Once
	logf := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		t.Log(msg)
		if strings.Contains(msg, "failed") {
			once.Do(func() { close(failed) })
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- Run(runCtx, cfg, Options{CertDir: t.TempDir(), RetryInterval: 200 * time.Millisecond, Logf: logf})
	}()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	id, _, _ := bootstraptoken.Split(token)
	issued := func(ctx context.Context) (int, error) {
		csrs, err := cs.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		n := 0
		for _, c := range csrs.Items {
			if c.Spec.Username == "system:bootstrap:"+id && len(c.Status.Certificate) > 0 {
				n++
			}
		}
		return n, nil
	}
	select {
	case <-failed:
	case <-time.After(time.Minute):
		t.Fatal("no failed registration within a minute")
	}
	if n, err := issued(ctx); err != nil || n != 1 {
		t.Fatalf("%d CSRs issued to the token (%v) before the registration failed, want 1", n, err)
	}
	key := bootstraptoken.Key(id)
	if err := cs.CoreV1().Secrets(key.Namespace).Delete(ctx, key.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the agent's Node to be registered and Ready", func() (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		return err == nil && n.Spec.ProviderID == providerID && testenv.NodeReady(n), nil
	})
	if n, err := issued(ctx); err != nil || n != 1 {
		t.Errorf("%d CSRs issued to the token (%v), want 1", n, err)
	}
}

// TestRestartedAgentRejoinsWithItsCertificate: an agent started again after
// its join (a restarted process, or a VM rebooted with its certificate
// directory) rejoins with the certificate it has, as the kubelet does: its
// bootstrap token is deleted once the Node joined, so bootstrapping again
// would fail forever.
func TestRestartedAgentRejoinsWithItsCertificate(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cs := kubernetes.NewForConfigOrDie(cluster.RESTConfig())
	const node, providerID = "vm-restart", "millwright-libvirt://default/vm-restart"
	ud, md, token := seed(t, cs, node, providerID)
	cfg, err := ParseSeed(ud, md)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{CertDir: t.TempDir(), Logf: t.Logf}
	if _, err := Join(ctx, cfg, opts); err != nil {
		t.Fatal(err)
	}
	id, _, _ := bootstraptoken.Split(token)
	key := bootstraptoken.Key(id)
	if err := cs.CoreV1().Secrets(key.Namespace).Delete(ctx, key.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	a, err := Join(ctx, cfg, opts)
	if err != nil {
		t.Fatalf("the agent started again after its token was deleted: %v", err)
	}
	if _, err := a.Client().CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); err != nil {
		t.Errorf("reading its Node as system:node:%s: %v", node, err)
	}
	csrs, err := cs.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range csrs.Items {
		if c.Spec.Username == "system:bootstrap:"+id {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d CSRs by system:bootstrap:%s, want 1: the second start bootstrapped again", n, id)
	}

	// A certificate for another node, or about to expire, is not taken.
	other := cfg
	other.NodeName = "not-" + node
	if rc, err := reuseCredentials(opts.CertDir, other, time.Now(), time.Hour); rc != nil || err == nil {
		t.Errorf("reuseCredentials for %s with %s's certificate = %v, %v; want an error", other.NodeName, node, rc, err)
	}
	if rc, err := reuseCredentials(opts.CertDir, cfg, time.Now().AddDate(2, 0, 0), time.Hour); rc != nil || err == nil || !strings.Contains(err.Error(), "expires") {
		t.Errorf("reuseCredentials two years on = %v, %v; want an expiry error", rc, err)
	}
}

// checkStopped fails t unless the Node's Ready condition, if it has one,
// says the agent stopped (False, reason NodeAgentStopped); when says after
// what. It reports whether the Node has a Ready condition.
func checkStopped(t *testing.T, n *corev1.Node, when string) (hasReady bool) {
	t.Helper()
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		if c.Status != corev1.ConditionFalse || c.Reason != reasonStopped {
			t.Errorf("Ready %s: %+v", when, c)
		}
		return true
	}
	return false
}
