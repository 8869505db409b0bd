package tokenbootstrap

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// renderedFiles renders the user data of a Machine m-1 with a CA and
// returns the document and its files by path.
func renderedFiles(t *testing.T) (cloudConfig, map[string]string) {
	t.Helper()
	ud, err := UserData(JoinData{Server: "https://10.0.2.100:6443", CA: []byte("-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n"),
		Token: "abcdef.0123456789abcdef", NodeName: "m-1", Version: "v1.36.3"})
	if err != nil {
		t.Fatal(err)
	}
	var doc cloudConfig
	if err := yaml.UnmarshalStrict(ud, &doc); err != nil {
		t.Fatalf("user data is not a cloud-config: %v\n%s", err, ud)
	}
	files := map[string]string{}
	for _, f := range doc.WriteFiles {
		files[f.Path] = f.Content
	}
	return doc, files
}

// The kubelet drop-in: the packaged ExecStart cleared, then the kubelet
// with exactly the flags the kubelet 1.36 takes for a TLS bootstrap, the
// meta-data's flags and the image's KUBELET_EXTRA_ARGS last (so they win
// over a flag given before), and no flag the kubelet deprecated in favour
// of its configuration file or removed.
func TestRenderedKubeletDropIn(t *testing.T) {
	_, files := renderedFiles(t)
	want := "[Service]\n" +
		"EnvironmentFile=-/etc/default/kubelet\n" +
		"EnvironmentFile=-/etc/millwright/kubelet.env\n" +
		"ExecStart=\n" +
		"ExecStart=/usr/bin/kubelet --bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf" +
		" --config=/var/lib/kubelet/config.yaml --cert-dir=/var/lib/kubelet/pki --hostname-override=m-1" +
		" $MILLWRIGHT_KUBELET_ARGS $KUBELET_EXTRA_ARGS\n"
	if got := files[kubeletDropInPath]; got != want {
		t.Errorf("drop-in %s:\n%s\nwant:\n%s", kubeletDropInPath, got, want)
	}
	for _, flag := range []string{"--client-ca-file", "--rotate-certificates", "--pod-infra-container-image", "--register-with-taints", "--node-labels", "--cgroup-driver"} {
		if strings.Contains(files[kubeletDropInPath], flag) {
			t.Errorf("the drop-in passes %s, a flag the kubelet deprecated for its configuration file or removed", flag)
		}
	}
}

// The KubeletConfiguration: the kubelet's API closed to anonymous
// clients and authorized by the API server, the cluster CA for client
// certificates, rotation on, and the Node registered with Millwright's
// uninitialized taint (the Machine controller removes it once the
// template's labels and taints are on the Node).
func TestRenderedKubeletConfiguration(t *testing.T) {
	_, files := renderedFiles(t)
	var got map[string]any
	if err := yaml.Unmarshal([]byte(files[kubeletConfigPath]), &got); err != nil {
		t.Fatalf("%s: %v\n%s", kubeletConfigPath, err, files[kubeletConfigPath])
	}
	want := map[string]any{
		"apiVersion": "kubelet.config.k8s.io/v1beta1",
		"kind":       "KubeletConfiguration",
		"authentication": map[string]any{
			"anonymous": map[string]any{"enabled": false},
			"webhook":   map[string]any{"enabled": true},
			"x509":      map[string]any{"clientCAFile": "/etc/kubernetes/pki/ca.crt"},
		},
		"authorization":      map[string]any{"mode": "Webhook"},
		"rotateCertificates": true,
		"registerWithTaints": []any{map[string]any{"key": v1alpha1.UninitializedTaintKey, "effect": "NoSchedule"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n%s\nwant %v", kubeletConfigPath, files[kubeletConfigPath], want)
	}
	if files[caPath] == "" {
		t.Errorf("no %s, which the configuration names", caPath)
	}
}

// The commands: the meta-data's flags written first, then the kubelet
// enabled and started once systemd has read the drop-in.
func TestRenderedRunCmd(t *testing.T) {
	doc, _ := renderedFiles(t)
	want := [][]string{
		{"sh", "-c", instanceArgsScript},
		{"systemctl", "daemon-reload"},
		{"systemctl", "enable", "--now", "kubelet"},
	}
	if !reflect.DeepEqual(doc.RunCmd, want) {
		t.Errorf("runcmd %q; want %q", doc.RunCmd, want)
	}
}

// The first command, run by sh against a cloud-init that answers from
// given meta-data: Millwright's seed (provider-id) gives --provider-id
// and its local-hostname as the Node's name; another cloud's meta-data,
// without provider-id, gives no flag, even with a local-hostname.
func TestInstanceArgsScript(t *testing.T) {
	for _, tc := range []struct {
		name     string
		metaData map[string]string
		want     string
	}{
		{"libvirt seed", map[string]string{"provider_id": "libvirt://host/mw-1234", "local_hostname": "m-1-ab12c"},
			"MILLWRIGHT_KUBELET_ARGS=--provider-id=libvirt://host/mw-1234 --hostname-override=m-1-ab12c\n"},
		{"seed without local-hostname", map[string]string{"provider_id": "libvirt://host/mw-1234"},
			"MILLWRIGHT_KUBELET_ARGS=--provider-id=libvirt://host/mw-1234\n"},
		{"other cloud", map[string]string{"local_hostname": "ip-10-0-0-1"}, "MILLWRIGHT_KUBELET_ARGS=\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			// A cloud-init whose `query ds.meta_data.KEY` prints the value,
			// or fails as the real one does for a key it lacks.
			fake := "#!/bin/sh\ncase \"$1 $2\" in\n"
			for k, v := range tc.metaData {
				fake += "\"query ds.meta_data." + k + "\") echo '" + v + "' ;;\n"
			}
			fake += "*) echo \"Undefined instance-data key $2\" >&2; exit 1 ;;\nesac\n"
			if err := os.WriteFile(filepath.Join(dir, "cloud-init"), []byte(fake), 0o755); err != nil {
				t.Fatal(err)
			}
			etc := filepath.Join(dir, "etc")
			script := strings.ReplaceAll(instanceArgsScript, "/etc/millwright", etc)
			cmd := exec.Command("sh", "-c", script)
			cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			got, err := os.ReadFile(filepath.Join(etc, filepath.Base(instanceEnvPath)))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("%s:\n%q\nwant\n%q", instanceEnvPath, got, tc.want)
			}
		})
	}
}
