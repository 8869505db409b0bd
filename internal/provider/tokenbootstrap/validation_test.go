package tokenbootstrap

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bootstrapv1 "github.com/millwright-dev/millwright/api/bootstrap/v1alpha1"
)

// The CRD refuses what can never work, with a message naming the field.
func TestSpecValidation(t *testing.T) {
	o := newConfig(t, nil)
	for _, tc := range []struct {
		name string
		spec bootstrapv1.TokenBootstrapConfigSpec
		want string
	}{
		{"http", bootstrapv1.TokenBootstrapConfigSpec{APIServer: "http://api.example:6443"}, "apiServer must be an https URL"},
		{"no URL", bootstrapv1.TokenBootstrapConfigSpec{APIServer: "api.example"}, "apiServer must be an https URL"},
		{"short TTL", bootstrapv1.TokenBootstrapConfigSpec{TokenTTL: &metav1.Duration{Duration: time.Second}}, "tokenTTL must be between"},
		{"long TTL", bootstrapv1.TokenBootstrapConfigSpec{TokenTTL: &metav1.Duration{Duration: 48 * time.Hour}}, "tokenTTL must be between"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &bootstrapv1.TokenBootstrapConfig{
				ObjectMeta: metav1.ObjectMeta{Namespace: o.cfg.Namespace, GenerateName: "bad-"},
				Spec:       tc.spec,
			}
			err := testClient.Create(t.Context(), cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("create: %v; want %q", err, tc.want)
			}
		})
	}
	// Valid values pass, and the spec is immutable afterwards.
	ok := &bootstrapv1.TokenBootstrapConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.cfg.Namespace, Name: "ok"},
		Spec: bootstrapv1.TokenBootstrapConfigSpec{
			APIServer: "https://api.example:6443", TokenTTL: &metav1.Duration{Duration: time.Hour},
		},
	}
	if err := testClient.Create(t.Context(), ok); err != nil {
		t.Fatal(err)
	}
	ok.Spec.TokenTTL = &metav1.Duration{Duration: 2 * time.Hour}
	if err := testClient.Update(t.Context(), ok); err == nil || !strings.Contains(err.Error(), "spec is immutable") {
		t.Fatalf("spec update: %v", err)
	}
}

// The user data renders without a CA (a renderer; joinSettings never
// hands it none) and then names no client CA; joinSettings
// refuses a missing CA and anything but PEM certificates.
func TestUserDataWithoutCA(t *testing.T) {
	ud, err := UserData(JoinData{Server: "https://api.example:6443", Token: "abcdef.0123456789abcdef", NodeName: "m-1"})
	if err != nil {
		t.Fatal(err)
	}
	checkUserData(t, ud, Defaults{APIServer: "https://api.example:6443"}, "abcdef.0123456789abcdef", "m-1")
	if strings.Contains(string(ud), "--client-ca-file") || strings.Contains(string(ud), "clientCAFile") {
		t.Errorf("user data without a CA refers to one:\n%s", ud)
	}
	if strings.Contains(string(ud), VersionPath) {
		t.Errorf("user data of a Machine without spec.version names %s:\n%s", VersionPath, ud)
	}
	d := testDefaults(t)
	for name, ca := range map[string][]byte{
		"none":           nil,
		"not a cert":     []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
		"trailing junk":  append(append([]byte(nil), d.CABundle...), "junk"...),
		"not PEM at all": []byte("ca"),
	} {
		if _, _, problem := joinSettings(&bootstrapv1.TokenBootstrapConfigSpec{CABundle: ca}, Defaults{APIServer: d.APIServer}); !strings.Contains(problem, "CA") {
			t.Errorf("CA bundle %s: problem %q, want it refused", name, problem)
		}
	}
	if _, _, problem := joinSettings(&bootstrapv1.TokenBootstrapConfigSpec{}, d); problem != "" {
		t.Errorf("the target cluster's CA is refused: %s", problem)
	}
	if _, _, problem := joinSettings(&bootstrapv1.TokenBootstrapConfigSpec{}, Defaults{}); problem == "" {
		t.Error("no API server at all was accepted")
	}
}
