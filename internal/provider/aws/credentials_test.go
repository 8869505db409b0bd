package aws

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/millwright-dev/millwright/internal/motoserver"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// TestCredentials creates with each form of credentials Secret: MCM's
// key names and a role assumed through (moto's) STS work; a half key
// pair is InvalidArgument naming the missing key, refused credentials
// PermissionDenied; nothing is launched by a refused one.
func TestCredentials(t *testing.T) {
	p := motoserver.NewProxy(t, moto.URL)
	d := newDriver(t, p.URL)
	c := class("creds", validSpec)
	call := func(name string, data map[string]string) error {
		s := &corev1.Secret{Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		_, err := d.CreateMachine(ctxT(t), &driver.CreateMachineRequest{Machine: machine("creds-" + name), MachineClass: c, Secret: s})
		return err
	}
	if err := call("mcm", map[string]string{KeyMCMAccessKeyID: "AKIDMCM", KeyMCMSecretAccessKey: "x"}); err != nil {
		t.Errorf("MCM's key names: %v", err)
	}
	if err := call("role", map[string]string{KeyAccessKeyID: "AKIDROLE", KeySecretAccessKey: "x", KeyRoleARN: "arn:aws:iam::123456789012:role/millwright"}); err != nil {
		t.Errorf("a role ARN: %v", err)
	}
	if p.Calls("AssumeRole") != 1 {
		t.Errorf("%d AssumeRole calls; want 1", p.Calls("AssumeRole"))
	}
	for _, tc := range []struct {
		name string
		data map[string]string
		want driver.Code
		says string
	}{
		{"nosecret", map[string]string{KeyAccessKeyID: "AKIDHALF"}, driver.InvalidArgument, "secret.secretAccessKey"},
		{"noaccess", map[string]string{KeyMCMSecretAccessKey: "x"}, driver.InvalidArgument, "secret.accessKeyID"},
		{"tokenonly", map[string]string{KeySessionToken: "x"}, driver.InvalidArgument, "secret.sessionToken"},
	} {
		if err := call(tc.name, tc.data); driver.CodeOf(err) != tc.want || !strings.Contains(driver.MessageOf(err), tc.says) {
			t.Errorf("%s: %v; want %s naming %s", tc.name, err, tc.want, tc.says)
		}
	}
	p.Fail(&motoserver.Fault{Action: "DescribeInstances", Code: "AuthFailure", Status: 401})
	if err := call("refused", map[string]string{KeyAccessKeyID: "AKIDREFUSED", KeySecretAccessKey: "wrong"}); driver.CodeOf(err) != driver.PermissionDenied ||
		!strings.Contains(driver.MessageOf(err), "AuthFailure") {
		t.Errorf("refused credentials: %v; want PermissionDenied saying AuthFailure", err)
	}
	p.Clear()
	p.Fail(&motoserver.Fault{Action: "AssumeRole", Code: "AccessDenied", Status: 403})
	if err := call("rolerefused", map[string]string{KeyAccessKeyID: "AKIDROLE2", KeySecretAccessKey: "x", KeyRoleARN: "arn:aws:iam::123456789012:role/other"}); driver.CodeOf(err) != driver.PermissionDenied {
		t.Errorf("a role STS refuses: %v; want PermissionDenied", err)
	}
	if n := len(clusterInstances(t)); n != 2 {
		t.Errorf("moto has %d instances of the cluster; want 2 (MCM keys, role)", n)
	}
}

// TestSessionNameFitsSTS checks the STS session name of the longest
// cluster name.
func TestSessionNameFitsSTS(t *testing.T) {
	long := strings.Repeat("c", 100)
	if err := CheckClusterName(long); err != nil {
		t.Fatal(err)
	}
	if n := sessionName(long); len(n) > 64 || !strings.HasPrefix(n, "millwright-ccc") {
		t.Errorf("session name %q (%d characters); STS takes 64", n, len(n))
	}
}
