package nodeagent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/millwright-dev/millwright/internal/bootstraptoken"
	"github.com/millwright-dev/millwright/internal/provider/tokenbootstrap"
)

// A join without the cluster's CA can never work: the agent's own client
// pins that CA once it has its certificate. It is refused before the
// bootstrap token is used: ParseSeed refuses such a seed, and Join such a
// config before it makes a CSR, even where the system roots trust the API
// server (SSL_CERT_FILE here), which used to get the CSR approved and the
// token spent before the registration failed for ever.
func TestNoCAIsRefusedBeforeTheToken(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(cluster.RESTConfig())
	const node, providerID = "vm-no-ca", "millwright-libvirt://default/vm-no-ca"
	withCA, md, token := seed(t, cs, node, providerID)
	noCA, err := tokenbootstrap.UserData(tokenbootstrap.JoinData{Server: cluster.RESTConfig().Host, Token: token, NodeName: node})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseSeed(noCA, md); err == nil || !strings.Contains(err.Error(), "CA bundle") {
		t.Errorf("ParseSeed of user data without a CA: %v, want it refused for its CA bundle", err)
	}

	cfg, err := ParseSeed(withCA, md)
	if err != nil {
		t.Fatal(err)
	}
	cfg.CA = nil
	roots := filepath.Join(t.TempDir(), "roots.pem")
	if err := os.WriteFile(roots, cluster.RESTConfig().CAData, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", roots)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, err := Join(ctx, cfg, Options{CertDir: t.TempDir(), Logf: t.Logf}); err == nil || !strings.Contains(err.Error(), "CA bundle") {
		t.Errorf("Join without a CA: %v, want it refused for its CA bundle", err)
	}
	id, _, _ := bootstraptoken.Split(token)
	csrs, err := cs.CertificatesV1().CertificateSigningRequests().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range csrs.Items {
		if c.Spec.Username == "system:bootstrap:"+id {
			t.Errorf("CSR %s was made with the bootstrap token (conditions %+v): the token was spent on a join that cannot succeed", c.Name, c.Status.Conditions)
		}
	}
}
