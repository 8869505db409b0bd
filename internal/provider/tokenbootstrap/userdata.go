package tokenbootstrap

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// Where the user data puts things on the VM: kubeadm's paths, so that an
// image prepared for kubeadm nodes (kubelet and a container runtime
// installed; `make kubelet-image` builds one, docs/providers/node-images.md)
// needs nothing else.
const (
	bootstrapKubeconfigPath = "/etc/kubernetes/bootstrap-kubelet.conf"
	kubeconfigPath          = "/etc/kubernetes/kubelet.conf"
	caPath                  = "/etc/kubernetes/pki/ca.crt"
	kubeletConfigPath       = "/var/lib/kubelet/config.yaml"
	kubeletCertDir          = "/var/lib/kubelet/pki"
	kubeletDropInPath       = "/etc/systemd/system/kubelet.service.d/10-millwright-bootstrap.conf"
	kubeletPath             = "/usr/bin/kubelet"
	// instanceEnvPath is written on the VM by the user data's first
	// command, from the instance's meta-data: MILLWRIGHT_KUBELET_ARGS,
	// the kubelet flags only the VM's provider knows (--provider-id).
	instanceEnvPath = "/etc/millwright/kubelet.env"
	// VersionPath holds the Machine's spec.version (one line, e.g.
	// v1.36.3) when it has one: the Kubernetes version the node is to
	// run. An image's own tooling may read it; millwright-node-agent
	// reports it as its kubeletVersion (docs/providers/node-agent.md).
	VersionPath = "/etc/millwright/kubernetes-version"
)

// cloudConfigHeader starts every cloud-config document; cloud-init
// ignores user data without it.
const cloudConfigHeader = "#cloud-config\n"

// JoinData is what one VM's user data says.
type JoinData struct {
	// Server and CA reach and authenticate the API server.
	Server string
	CA     []byte
	// Token is the bootstrap token, "id.secret".
	Token string
	// NodeName is the Node's name: the Machine's.
	NodeName string
	// Version is the Machine's spec.version; empty renders no VersionPath.
	Version string
}

// cloudConfig is the subset of cloud-init's schema the user data uses.
type cloudConfig struct {
	WriteFiles []cloudFile `json:"write_files"`
	RunCmd     [][]string  `json:"runcmd"`
}

type cloudFile struct {
	Path        string `json:"path"`
	Owner       string `json:"owner"`
	Permissions string `json:"permissions"`
	Content     string `json:"content"`
}

// kubeletConfig is the subset of the kubelet's KubeletConfiguration
// (kubelet.config.k8s.io/v1beta1) the user data sets.
type kubeletConfig struct {
	APIVersion         string         `json:"apiVersion"`
	Kind               string         `json:"kind"`
	Authentication     kubeletAuthn   `json:"authentication"`
	Authorization      kubeletAuthz   `json:"authorization"`
	RotateCertificates bool           `json:"rotateCertificates"`
	RegisterWithTaints []corev1.Taint `json:"registerWithTaints"`
}

type kubeletAuthn struct {
	Anonymous struct {
		Enabled bool `json:"enabled"`
	} `json:"anonymous"`
	Webhook struct {
		Enabled bool `json:"enabled"`
	} `json:"webhook"`
	X509 struct {
		ClientCAFile string `json:"clientCAFile,omitempty"`
	} `json:"x509"`
}

type kubeletAuthz struct {
	Mode string `json:"mode"`
}

// instanceArgsScript is the user data's first command: it writes
// instanceEnvPath from the meta-data cloud-init read. Millwright's libvirt
// seed says the providerID the Node must carry (provider-id, Millwright's
// extension) and the Node's name (local-hostname, which wins over the
// Machine's name, as for millwright-node-agent: the driver renames a Node
// whose name another namespace's Machine took). Meta-data without
// provider-id (another cloud's) adds no flag: the Node's name stays the
// Machine's, and the providerID is whatever sets it there (a cloud
// controller manager).
const instanceArgsScript = `set -u
args=
id=$(cloud-init query ds.meta_data.provider_id 2>/dev/null) || id=
if [ -n "$id" ]; then
  args="--provider-id=$id"
  name=$(cloud-init query ds.meta_data.local_hostname 2>/dev/null) || name=
  if [ -n "$name" ]; then args="$args --hostname-override=$name"; fi
fi
mkdir -p /etc/millwright
printf 'MILLWRIGHT_KUBELET_ARGS=%s\n' "$args" >` + instanceEnvPath + `
echo "millwright: kubelet flags from the meta-data: $args"
`

// userData renders the cloud-init document that joins the VM, in
// kubeadm's layout:
//   - the bootstrap kubeconfig with the token, and the CA;
//   - the KubeletConfiguration: the kubelet's API authenticates clients
//     by the cluster's CA and bearer tokens (webhook) and authorizes them
//     through the API server, as kubeadm's (no anonymous access, which
//     the kubelet's defaults allow), the client certificate is rotated,
//     and the Node registers with Millwright's uninitialized taint, which
//     the Machine controller removes once the Node has its labels and
//     taints (so nothing is scheduled there before);
//   - a kubelet drop-in that starts the kubelet with
//     --bootstrap-kubeconfig, that configuration and the Machine's name
//     (--hostname-override), then the flags of instanceEnvPath and the
//     image's own KUBELET_EXTRA_ARGS (/etc/default/kubelet, as kubeadm's
//     drop-in reads it);
//   - the Machine's spec.version in VersionPath when it has one;
//   - commands that write instanceEnvPath from the meta-data and start
//     the kubelet.
//
// The kubelet trades the token for a client certificate (the CSR is
// approved by whatever approves the cluster's kubelet CSRs) and writes
// its own kubeconfig. millwright-node-agent (internal/nodeagent, whose
// tests render with this function) reads the bootstrap kubeconfig's
// write_files entry and --hostname-override from it, and VersionPath (the
// Machine's spec.version): see docs/providers/node-agent.md before
// changing any of them; docs/providers/node-images.md says what a kubelet
// gets.
func UserData(d JoinData) ([]byte, error) {
	kubeconfig, err := bootstrapKubeconfig(d)
	if err != nil {
		return nil, err
	}
	args := []string{
		kubeletPath,
		"--bootstrap-kubeconfig=" + bootstrapKubeconfigPath,
		"--kubeconfig=" + kubeconfigPath,
		"--config=" + kubeletConfigPath,
		"--cert-dir=" + kubeletCertDir,
		"--hostname-override=" + d.NodeName,
		// Last: a flag given twice takes its last value.
		"$MILLWRIGHT_KUBELET_ARGS",
		"$KUBELET_EXTRA_ARGS",
	}
	files := []cloudFile{{Path: bootstrapKubeconfigPath, Owner: "root:root", Permissions: "0600", Content: string(kubeconfig)}}
	kc := kubeletConfig{
		APIVersion:         "kubelet.config.k8s.io/v1beta1",
		Kind:               "KubeletConfiguration",
		Authorization:      kubeletAuthz{Mode: "Webhook"},
		RotateCertificates: true,
		RegisterWithTaints: []corev1.Taint{{Key: v1alpha1.UninitializedTaintKey, Effect: corev1.TaintEffectNoSchedule}},
	}
	kc.Authentication.Webhook.Enabled = true
	if len(d.CA) > 0 {
		files = append(files, cloudFile{Path: caPath, Owner: "root:root", Permissions: "0644", Content: string(d.CA)})
		kc.Authentication.X509.ClientCAFile = caPath
	}
	config, err := yaml.Marshal(kc)
	if err != nil {
		return nil, err
	}
	files = append(files, cloudFile{Path: kubeletConfigPath, Owner: "root:root", Permissions: "0644", Content: string(config)})
	// The drop-in replaces the packaged ExecStart (the empty line clears
	// it), so the kubelet starts with these flags and no others. Its name
	// sorts after kubeadm's 10-kubeadm.conf, so it wins over that one too.
	// A missing environment file is no error ("-"); an unset variable
	// expands to no argument.
	dropIn := fmt.Sprintf("[Service]\nEnvironmentFile=-/etc/default/kubelet\nEnvironmentFile=-%s\nExecStart=\nExecStart=%s\n", instanceEnvPath, strings.Join(args, " "))
	files = append(files, cloudFile{Path: kubeletDropInPath, Owner: "root:root", Permissions: "0644", Content: dropIn})
	if d.Version != "" {
		files = append(files, cloudFile{Path: VersionPath, Owner: "root:root", Permissions: "0644", Content: d.Version + "\n"})
	}
	doc, err := yaml.Marshal(cloudConfig{
		WriteFiles: files,
		RunCmd: [][]string{
			{"sh", "-c", instanceArgsScript},
			{"systemctl", "daemon-reload"},
			{"systemctl", "enable", "--now", "kubelet"},
		},
	})
	if err != nil {
		return nil, err
	}
	return append([]byte(cloudConfigHeader), doc...), nil
}

// bootstrapKubeconfig is the kubeconfig the kubelet bootstraps with.
func bootstrapKubeconfig(d JoinData) ([]byte, error) {
	const name = "default"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: d.Server, CertificateAuthorityData: d.CA}
	cfg.AuthInfos["kubelet-bootstrap"] = &clientcmdapi.AuthInfo{Token: d.Token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: "kubelet-bootstrap"}
	cfg.CurrentContext = name
	return clientcmd.Write(*cfg)
}
