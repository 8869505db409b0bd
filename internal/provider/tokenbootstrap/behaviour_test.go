package tokenbootstrap

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	bootstrapv1 "github.com/millwright-dev/millwright/api/bootstrap/v1alpha1"
	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/bootstraptoken"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// An owned config gets a bootstrap token in kube-system and a user-data
// Secret that joins the VM with it and says the Machine's spec.version,
// and reports them on the contract's fields.
func TestTokenAndUserDataAreMade(t *testing.T) {
	startController(t)
	const version = "v1.36.3"
	o := newOwned(t, func(_ *bootstrapv1.TokenBootstrapConfig, m *v1alpha1.Machine) { m.Spec.Version = version })
	start := time.Now()
	o.eventually("to be ready", ready)

	st := o.cfg.Status
	if ptr.Deref(st.DataSecretName, "") != o.cfg.Name || st.Initialization == nil || !st.Initialization.DataSecretCreated {
		t.Errorf("contract fields %+v", st)
	}
	if !conditionIs(bootstrapv1.ReadyCondition, "True", bootstrapv1.ReadyReasonReady)(o.cfg) ||
		!conditionIs(bootstrapv1.PausedCondition, "False", bootstrapv1.PausedReasonNotPaused)(o.cfg) {
		t.Errorf("conditions %+v", st.Conditions)
	}
	tok := o.token()
	if tok == nil {
		t.Fatal("no bootstrap token in kube-system")
	}
	id := bootstraptoken.ID(o.cfg.UID)
	if st.TokenID != id || tok.Type != corev1.SecretTypeBootstrapToken || string(tok.Data["token-id"]) != id {
		t.Errorf("token %s type %s data id %q, status id %q", tok.Name, tok.Type, tok.Data["token-id"], st.TokenID)
	}
	for k, v := range map[string]string{"usage-bootstrap-authentication": "true", "usage-bootstrap-signing": "true", "auth-extra-groups": bootstraptoken.Group} {
		if string(tok.Data[k]) != v {
			t.Errorf("token %s = %q, want %q", k, tok.Data[k], v)
		}
	}
	exp, ok := bootstraptoken.Expiration(tok)
	if !ok || exp.Before(start.Add(bootstrapv1.DefaultTokenTTL-time.Minute)) || exp.After(time.Now().Add(bootstrapv1.DefaultTokenTTL)) {
		t.Errorf("token expires %v (ok %v), want about %s from now", exp, ok, bootstrapv1.DefaultTokenTTL)
	}
	if st.TokenExpiration == nil || !st.TokenExpiration.Time.Equal(exp) {
		t.Errorf("status.tokenExpiration %v, token's %v", st.TokenExpiration, exp)
	}

	data := o.dataSecret()
	if data == nil {
		t.Fatal("no user-data Secret")
	}
	if !metav1.IsControlledBy(data, o.cfg) {
		t.Errorf("user-data Secret owners %+v", data.OwnerReferences)
	}
	token := bootstraptoken.Token(id, bootstraptoken.SecretOf(tok))
	if string(data.Data[bootstrapv1.DataSecretTokenKey]) != token {
		t.Errorf("user-data Secret's token %q, the token Secret's %q", data.Data[bootstrapv1.DataSecretTokenKey], token)
	}
	checkUserData(t, data.Data[bootstrapv1.DataSecretKey], testDefaults(t), token, o.m.Name)
	if got := userDataFile(t, data.Data[bootstrapv1.DataSecretKey], VersionPath); got != version+"\n" {
		t.Errorf("%s in the user data = %q, want the Machine's spec.version %q", VersionPath, got, version)
	}
}

// userDataFile is the content of the user data's write_files entry path.
func userDataFile(t *testing.T, ud []byte, path string) string {
	t.Helper()
	var doc cloudConfig
	if err := yaml.Unmarshal(ud, &doc); err != nil {
		t.Fatal(err)
	}
	for _, f := range doc.WriteFiles {
		if f.Path == path {
			return f.Content
		}
	}
	return ""
}

// checkUserData parses the cloud-config and checks that it joins as node
// with token against the defaults' API server.
func checkUserData(t *testing.T, ud []byte, d Defaults, token, node string) {
	t.Helper()
	if !strings.HasPrefix(string(ud), "#cloud-config\n") {
		t.Fatalf("user data does not start with #cloud-config:\n%s", ud)
	}
	var doc cloudConfig
	if err := yaml.UnmarshalStrict(ud, &doc); err != nil {
		t.Fatalf("user data is not a cloud-config: %v\n%s", err, ud)
	}
	files := map[string]string{}
	for _, f := range doc.WriteFiles {
		files[f.Path] = f.Content
	}
	var kc struct {
		Clusters []struct {
			Cluster struct {
				Server string `json:"server"`
				CA     []byte `json:"certificate-authority-data"`
			} `json:"cluster"`
		} `json:"clusters"`
		Users []struct {
			User struct {
				Token string `json:"token"`
			} `json:"user"`
		} `json:"users"`
	}
	if err := yaml.Unmarshal([]byte(files[bootstrapKubeconfigPath]), &kc); err != nil || len(kc.Clusters) != 1 || len(kc.Users) != 1 {
		t.Fatalf("bootstrap kubeconfig (%v):\n%s", err, files[bootstrapKubeconfigPath])
	}
	if kc.Clusters[0].Cluster.Server != d.APIServer || string(kc.Clusters[0].Cluster.CA) != string(d.CABundle) || kc.Users[0].User.Token != token {
		t.Errorf("bootstrap kubeconfig server %q CA %d bytes token %q; want %q, %d bytes, %q",
			kc.Clusters[0].Cluster.Server, len(kc.Clusters[0].Cluster.CA), kc.Users[0].User.Token, d.APIServer, len(d.CABundle), token)
	}
	dropIn := files[kubeletDropInPath]
	for _, want := range []string{"--bootstrap-kubeconfig=" + bootstrapKubeconfigPath, "--hostname-override=" + node} {
		if !strings.Contains(dropIn, want) {
			t.Errorf("kubelet drop-in lacks %s:\n%s", want, dropIn)
		}
	}
	if len(doc.RunCmd) == 0 || !strings.Contains(strings.Join(doc.RunCmd[len(doc.RunCmd)-1], " "), "kubelet") {
		t.Errorf("runcmd does not start the kubelet: %v", doc.RunCmd)
	}
}

// Without a Machine owner nothing is made; the config waits, and is made
// once a Machine adopts it.
func TestConfigWaitsForItsOwner(t *testing.T) {
	startController(t)
	o := newConfig(t, nil)
	o.eventually("to wait for its owner", conditionIs(bootstrapv1.ReadyCondition, "False", bootstrapv1.ReadyReasonWaitingForOwner))
	if o.token() != nil || o.dataSecret() != nil || len(o.cfg.Finalizers) != 0 {
		t.Fatalf("an unowned config has a token, user data or a finalizer: %+v", o.cfg)
	}
	o.adopt()
	o.eventually("to be ready once adopted", ready)
}

// Reconciling again, also concurrently and after the user data was lost,
// never makes a second token: the ID derives from the config's UID and
// the secret half is always the one the user data (or else the existing
// token) carries.
func TestRetriesMakeOneToken(t *testing.T) {
	o := newOwned(t, nil)
	r := directReconciler(t)
	req := reconcileRequest(o)
	// Concurrent first reconciles: one adds the finalizer, the others
	// conflict and are retried, as the workqueue would.
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			var err error
			for range 20 {
				if _, err = r.Reconcile(t.Context(), req); err == nil {
					break
				}
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatalf("reconcile never succeeded: %v", err)
		}
	}
	o.get()
	tok, data := o.token(), o.dataSecret()
	if tok == nil || data == nil || !o.cfg.Status.Ready {
		t.Fatalf("token %v, data %v, status %+v", tok != nil, data != nil, o.cfg.Status)
	}
	token := bootstraptoken.Token(bootstraptoken.ID(o.cfg.UID), bootstraptoken.SecretOf(tok))
	if string(data.Data[bootstrapv1.DataSecretTokenKey]) != token {
		t.Fatalf("the user data carries %q, the token is %q", data.Data[bootstrapv1.DataSecretTokenKey], token)
	}
	for range 3 {
		if _, err := r.Reconcile(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	// An attempt that made the token but not the user data.
	if err := o.c.Delete(t.Context(), data); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	again, data2 := o.token(), o.dataSecret()
	if again == nil {
		t.Fatal("the token is gone")
	}
	if again.UID != tok.UID || bootstraptoken.SecretOf(again) != bootstraptoken.SecretOf(tok) {
		t.Fatalf("the token was replaced: UID %s -> %s, secret changed %v", tok.UID, again.UID, bootstraptoken.SecretOf(again) != bootstraptoken.SecretOf(tok))
	}
	if data2 == nil || string(data2.Data[bootstrapv1.DataSecretTokenKey]) != token {
		t.Fatalf("the rewritten user data does not carry the existing token %q", token)
	}
}

// While the Machine has no Node, the token is extended before it expires,
// with the same secret (the VM boots with it).
func TestTokenIsExtendedUntilTheNodeJoins(t *testing.T) {
	startController(t)
	o := newOwned(t, func(cfg *bootstrapv1.TokenBootstrapConfig, _ *v1alpha1.Machine) {
		cfg.Spec.TokenTTL = &metav1.Duration{Duration: 6 * time.Second}
	})
	o.eventually("to be ready", ready)
	first := o.token()
	exp1, _ := bootstraptoken.Expiration(first)
	// Until past the first expiration (real time must pass: the token's
	// expiration is a wall-clock time), the token is there and valid at
	// every look.
	testenv.Consistently(t, time.Until(exp1)+time.Second, "the token present and unexpired", func() (bool, error) {
		tok := o.token()
		if tok == nil {
			return false, fmt.Errorf("the token is gone")
		}
		exp, _ := bootstraptoken.Expiration(tok)
		if !exp.After(time.Now()) {
			return false, fmt.Errorf("the token expired at %v", exp)
		}
		return true, nil
	})
	tok := o.token()
	if tok == nil {
		t.Fatal("the token is gone")
	}
	exp2, _ := bootstraptoken.Expiration(tok)
	if !exp2.After(time.Now()) || !exp2.After(exp1) {
		t.Fatalf("token expiration %v not extended past %v (now %v)", exp2, exp1, time.Now())
	}
	if tok.UID != first.UID || bootstraptoken.SecretOf(tok) != bootstraptoken.SecretOf(first) {
		t.Errorf("the token was replaced, not extended")
	}
	o.eventually("to report the extension", func(cfg *bootstrapv1.TokenBootstrapConfig) bool {
		return cfg.Status.TokenExpiration != nil && cfg.Status.TokenExpiration.After(exp1)
	})
}

// Once the Machine reports a nodeRef the token is deleted for good; the
// user data stays, and the config stays Ready (reason Joined).
func TestTokenIsDeletedOnceTheNodeJoined(t *testing.T) {
	startController(t)
	o := newOwned(t, nil)
	o.eventually("to be ready", ready)
	o.patchMachine(true, func(m *v1alpha1.Machine) { m.Status.NodeRef = &v1alpha1.NodeReference{Kind: "Node", Name: m.Name} })
	o.eventually("to see the join", func(cfg *bootstrapv1.TokenBootstrapConfig) bool { return cfg.Status.Joined })
	if o.token() != nil {
		t.Fatal("the token outlived the join")
	}
	if o.dataSecret() == nil || !conditionIs(bootstrapv1.ReadyCondition, "True", bootstrapv1.ReadyReasonJoined)(o.cfg) || o.cfg.Status.TokenExpiration != nil {
		t.Errorf("after the join: %+v", o.cfg.Status)
	}
	// Later reconciles (the Node gone again, a poke) never bring it back.
	o.patchMachine(true, func(m *v1alpha1.Machine) { m.Status.NodeRef = nil })
	o.patch(func(cfg *bootstrapv1.TokenBootstrapConfig) { cfg.Annotations = map[string]string{"poke": "1"} })
	testenv.Consistently(t, time.Second, "without a token after the join", func() (bool, error) { return o.token() == nil, nil })
}

// Deleting the config deletes its token before the config goes; the
// user-data Secret is the config's (controller owner reference), for the
// garbage collector, which envtest does not run, to delete with it.
func TestDeletionCleansUp(t *testing.T) {
	startController(t)
	o := newOwned(t, nil)
	o.eventually("to be ready", ready)
	uid := o.cfg.UID
	if err := o.c.Delete(t.Context(), o.cfg); err != nil {
		t.Fatal(err)
	}
	o.eventually("to be deleted", gone)
	o.cfg.UID = uid // token() derives the token's name from it
	if o.token() != nil {
		t.Fatal("the config is gone, its token is not")
	}
	data := o.dataSecret()
	if data == nil {
		t.Fatal("the user-data Secret was deleted by hand")
	}
	if ref := metav1.GetControllerOf(data); ref == nil || ref.UID != uid || ref.Kind != Kind {
		t.Errorf("user-data Secret's controller %+v is not the config", ref)
	}
}

// The paused annotation, on the Machine or on the config, stops
// everything (creation and deletion) but the Paused condition.
func TestPause(t *testing.T) {
	startController(t)
	o := newOwned(t, func(_ *bootstrapv1.TokenBootstrapConfig, m *v1alpha1.Machine) {
		m.Annotations = map[string]string{v1alpha1.PausedAnnotation: ""}
	})
	o.eventually("to be paused", conditionIs(bootstrapv1.PausedCondition, "True", bootstrapv1.PausedReasonPaused))
	if o.token() != nil || o.dataSecret() != nil || o.cfg.Status.Ready {
		t.Fatal("a paused config made its data")
	}
	o.patchMachine(false, func(m *v1alpha1.Machine) { delete(m.Annotations, v1alpha1.PausedAnnotation) })
	o.eventually("to be ready once unpaused", ready)

	o.patch(func(cfg *bootstrapv1.TokenBootstrapConfig) {
		cfg.Annotations = map[string]string{v1alpha1.PausedAnnotation: "true"}
	})
	o.eventually("to be paused", conditionIs(bootstrapv1.PausedCondition, "True", bootstrapv1.PausedReasonPaused))
	if err := o.c.Delete(t.Context(), o.cfg); err != nil {
		t.Fatal(err)
	}
	testenv.Consistently(t, time.Second, "a paused config keeps its token and user data", func() (bool, error) {
		o.get()
		return o.token() != nil && o.dataSecret() != nil, nil
	})
	uid := o.cfg.UID
	o.patch(func(cfg *bootstrapv1.TokenBootstrapConfig) { delete(cfg.Annotations, v1alpha1.PausedAnnotation) })
	o.eventually("to be deleted once unpaused", gone)
	if o.cfg.UID = uid; o.token() != nil {
		t.Fatal("the token outlived its config")
	}
}

// A CA bundle that is not PEM can never work: a terminal failure, no token.
func TestInvalidCABundleIsTerminal(t *testing.T) {
	startController(t)
	o := newOwned(t, func(cfg *bootstrapv1.TokenBootstrapConfig, _ *v1alpha1.Machine) {
		cfg.Spec.CABundle = []byte("not a certificate")
	})
	o.eventually("to fail", failedWith(bootstrapv1.FailureReasonInvalidConfiguration))
	if o.token() != nil || o.dataSecret() != nil || o.cfg.Status.Ready {
		t.Fatal("a failed config made its data")
	}
}

// A token Secret with the config's ID that is not the config's is never
// used nor deleted: a terminal TokenConflict.
func TestForeignTokenIsAConflict(t *testing.T) {
	startController(t)
	o := newConfig(t, nil)
	foreign := bootstraptoken.Build(bootstraptoken.Spec{
		ID: bootstraptoken.ID(o.cfg.UID), Secret: "0123456789abcdef", Expiration: time.Now().Add(time.Hour),
		Annotations: map[string]string{ownerUIDAnnotation: "someone-else"},
	})
	if err := o.c.Create(t.Context(), foreign); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.c.Delete(context.Background(), foreign) })
	o.adopt()
	o.eventually("to fail", failedWith(bootstrapv1.FailureReasonTokenConflict))
	if err := o.c.Delete(t.Context(), o.cfg); err != nil {
		t.Fatal(err)
	}
	uid := o.cfg.UID
	o.eventually("to be deleted", gone)
	if o.cfg.UID = uid; o.token() == nil || o.token().UID != foreign.UID {
		t.Fatal("the foreign token was deleted with the config")
	}
}

func reconcileRequest(o *owned) ctrl.Request {
	return ctrl.Request{NamespacedName: client.ObjectKeyFromObject(o.cfg)}
}
