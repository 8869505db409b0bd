package nodeagent

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/millwright-dev/millwright/internal/provider/tokenbootstrap"
)

// Pure parsing: the join itself is tested against a real cluster in
// agent_test.go.
func TestParseSeed(t *testing.T) {
	ud, err := tokenbootstrap.UserData(tokenbootstrap.JoinData{Server: "https://10.0.2.100:6443", CA: []byte("ca"), Token: "abcdef.0123456789abcdef", NodeName: "m-1"})
	if err != nil {
		t.Fatal(err)
	}
	const md = "instance-id: uid-1\nlocal-hostname: m-1\nprovider-id: p://m-1\n"
	got, err := ParseSeed(ud, []byte(md))
	if err != nil {
		t.Fatal(err)
	}
	want := JoinConfig{Server: "https://10.0.2.100:6443", CA: []byte("ca"), Token: "abcdef.0123456789abcdef", NodeName: "m-1", ProviderID: "p://m-1", InstanceID: "uid-1"}
	if got.Server != want.Server || string(got.CA) != string(want.CA) || got.Token != want.Token || got.NodeName != want.NodeName || got.ProviderID != want.ProviderID || got.InstanceID != want.InstanceID {
		t.Errorf("ParseSeed = %+v, want %+v", got, want)
	}

	for _, tc := range []struct {
		name, userData, metaData, wantErr string
	}{
		{"names disagree", string(ud), "local-hostname: m-2\nprovider-id: p://m-1\n", `"m-1", meta-data local-hostname "m-2"`},
		{"no provider-id", string(ud), "local-hostname: m-1\n", "no provider-id"},
		{"not cloud-config", "#!/bin/sh\necho hi\n", md, "not a #cloud-config"},
		{"no bootstrap kubeconfig", "#cloud-config\nwrite_files: []\n", md, "no write_files entry for " + BootstrapKubeconfigPath},
		{"no node name", "#cloud-config\nwrite_files:\n- path: " + BootstrapKubeconfigPath + "\n  content: |\n" + indent(kubeconfigOf(t, ud)), "provider-id: p://m-1\n", "no node name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSeed([]byte(tc.userData), []byte(tc.metaData))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseSeed: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// kubeconfigOf is the bootstrap kubeconfig a rendered user data holds.
func kubeconfigOf(t *testing.T, ud []byte) string {
	t.Helper()
	var cc cloudConfig
	if err := yaml.Unmarshal(ud, &cc); err != nil {
		t.Fatal(err)
	}
	for _, f := range cc.WriteFiles {
		if f.Path == BootstrapKubeconfigPath {
			return f.Content
		}
	}
	t.Fatal("no bootstrap kubeconfig")
	return ""
}

func indent(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		b.WriteString("    " + line)
	}
	return b.String()
}
