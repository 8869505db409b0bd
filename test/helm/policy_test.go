package helm_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/internal/testenv"
)

// checkTokenPolicy writes Secrets in kube-system as the manager's
// ServiceAccount, once the release is applied: RBAC lets it create and
// delete any Secret there, the chart's admission policy only bootstrap
// tokens (manager.bootstrapTokenPolicy).
func checkTokenPolicy(ctx context.Context, t *testing.T, ns string) {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: fmt.Sprintf("system:serviceaccount:%s:millwright-manager", ns),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	manager, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	other := func() *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "not-a-token-" + ns, Namespace: "kube-system"}, StringData: map[string]string{"k": "v"}}
	}
	// The API server loads a new policy in the background: wait until it
	// refuses what it must, then check what it must let through.
	testenv.Eventually(t, time.Minute, "the policy to refuse a Secret that is not a bootstrap token", func() (bool, error) {
		err := manager.Create(ctx, other())
		if err == nil {
			return false, env.Client.Delete(ctx, other())
		}
		return apierrors.IsForbidden(err) || apierrors.IsInvalid(err), nil
	})
	// A bootstrap token: created, patched, deleted.
	token := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + fmt.Sprintf("%06x", len(ns)), Namespace: "kube-system"},
		Type:       corev1.SecretTypeBootstrapToken,
		StringData: map[string]string{"token-id": "abcdef", "token-secret": "0123456789abcdef"},
	}
	if err := manager.Create(ctx, token); err != nil {
		t.Fatalf("the manager may not create a bootstrap token: %v", err)
	}
	if err := manager.Delete(ctx, token); err != nil {
		t.Errorf("the manager may not delete its bootstrap token: %v", err)
	}
	// Another Secret of kube-system, written by someone else, is neither
	// deleted by the manager nor misnamed as a token.
	sa := other()
	sa.Name = "bootstrap-token-x" + fmt.Sprint(len(ns)) // a token's name, not its type
	if err := env.Client.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Client.Delete(ctx, sa) }()
	if err := manager.Delete(ctx, sa); !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Errorf("the manager deleted a Secret of kube-system that is not a bootstrap token: %v", err)
	}
}
