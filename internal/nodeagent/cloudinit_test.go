package nodeagent

import (
	"strings"
	"testing"

	"github.com/millwright-dev/millwright/internal/provider/tokenbootstrap"
)

// instanceDataNoCloud is the shape of the instance-data.json cloud-init
// 22.4 wrote in a Debian 12 VM booted from the libvirt driver's seed
// (trimmed to the keys around ds.meta_data).
const instanceDataNoCloud = `{
 "base64_encoded_keys": [],
 "ds": {
  "_doc": "EXPERIMENTAL: The structure and format of content scoped under the 'ds' key may change in subsequent releases of cloud-init.",
  "meta_data": {
   "dsmode": "net",
   "instance-id": "uid-1",
   "local-hostname": "m-1",
   "provider-id": "p://m-1"
  }
 },
 "v1": {"cloud_name": "nocloud", "instance_id": "uid-1", "local_hostname": "m-1"}
}`

// Pure parsing, like TestParseSeed.
func TestParseCloudInit(t *testing.T) {
	ca := testCA(t)
	ud, err := tokenbootstrap.UserData(tokenbootstrap.JoinData{Server: "https://10.0.2.100:6443", CA: ca, Token: "abcdef.0123456789abcdef", NodeName: "m-1", Version: "v1.35.2"})
	if err != nil {
		t.Fatal(err)
	}
	kc := []byte(kubeconfigOf(t, ud))
	got, err := ParseCloudInit(kc, []byte("v1.35.2\n"), []byte(instanceDataNoCloud))
	if err != nil {
		t.Fatal(err)
	}
	if got.Server != "https://10.0.2.100:6443" || string(got.CA) != string(ca) || got.Token != "abcdef.0123456789abcdef" || got.NodeName != "m-1" || got.ProviderID != "p://m-1" || got.InstanceID != "uid-1" || got.Version != "v1.35.2" {
		t.Errorf("ParseCloudInit = %+v", got)
	}
	if none, err := ParseCloudInit(kc, nil, []byte(instanceDataNoCloud)); err != nil || none.Version != "" {
		t.Errorf("ParseCloudInit without a version file = %q, %v; want none", none.Version, err)
	}
	for _, tc := range []struct {
		name, kubeconfig, version, instanceData, wantErr string
	}{
		{"not NoCloud", string(kc), "", `{"v1": {}}`, "no ds.meta_data"},
		{"no provider-id", string(kc), "", strings.Replace(instanceDataNoCloud, `"provider-id"`, `"x"`, 1), "no provider-id"},
		{"no hostname", string(kc), "", strings.Replace(instanceDataNoCloud, `"local-hostname"`, `"x"`, 1), "no local-hostname"},
		{"not a version", string(kc), "1.35", instanceDataNoCloud, "is not a Kubernetes version"},
		{"no token", strings.Replace(string(kc), "abcdef.0123456789abcdef", "", 1), "", instanceDataNoCloud, BootstrapKubeconfigPath},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCloudInit([]byte(tc.kubeconfig), []byte(tc.version), []byte(tc.instanceData))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseCloudInit: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}
