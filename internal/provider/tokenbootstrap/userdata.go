package tokenbootstrap

import (
	"fmt"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
)

// Where the user data puts things on the VM: kubeadm's paths, so that an
// image prepared for kubeadm nodes (kubelet and a container runtime
// installed; building images is left to the user) needs nothing else.
const (
	bootstrapKubeconfigPath = "/etc/kubernetes/bootstrap-kubelet.conf"
	kubeconfigPath          = "/etc/kubernetes/kubelet.conf"
	caPath                  = "/etc/kubernetes/pki/ca.crt"
	kubeletDropInPath       = "/etc/systemd/system/kubelet.service.d/10-millwright-bootstrap.conf"
	kubeletPath             = "/usr/bin/kubelet"
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

// userData renders the cloud-init document that joins the VM: a bootstrap
// kubeconfig with the token, the CA, a kubelet drop-in that starts the
// kubelet with --bootstrap-kubeconfig under the Machine's name, and the
// commands that start it, and the Machine's spec.version in VersionPath
// when it has one. The kubelet trades the token for a client
// certificate (the CSR is approved by whatever approves the cluster's
// kubelet CSRs) and writes its own kubeconfig. millwright-node-agent
// (internal/nodeagent, whose tests render with this function) reads the
// bootstrap kubeconfig's write_files entry and --hostname-override from
// it, and VersionPath (the Machine's spec.version): see
// docs/providers/node-agent.md before changing any of them.
func UserData(d JoinData) ([]byte, error) {
	kubeconfig, err := bootstrapKubeconfig(d)
	if err != nil {
		return nil, err
	}
	args := []string{
		kubeletPath,
		"--bootstrap-kubeconfig=" + bootstrapKubeconfigPath,
		"--kubeconfig=" + kubeconfigPath,
		"--hostname-override=" + d.NodeName,
		"--rotate-certificates=true",
		"--cert-dir=/var/lib/kubelet/pki",
	}
	files := []cloudFile{{Path: bootstrapKubeconfigPath, Owner: "root:root", Permissions: "0600", Content: string(kubeconfig)}}
	if len(d.CA) > 0 {
		files = append(files, cloudFile{Path: caPath, Owner: "root:root", Permissions: "0644", Content: string(d.CA)})
		args = append(args, "--client-ca-file="+caPath)
	}
	// The drop-in replaces the packaged ExecStart (the empty line clears
	// it), so the kubelet starts with these flags and no others.
	dropIn := fmt.Sprintf("[Service]\nExecStart=\nExecStart=%s\n", strings.Join(args, " "))
	files = append(files, cloudFile{Path: kubeletDropInPath, Owner: "root:root", Permissions: "0644", Content: dropIn})
	if d.Version != "" {
		files = append(files, cloudFile{Path: VersionPath, Owner: "root:root", Permissions: "0644", Content: d.Version + "\n"})
	}
	doc, err := yaml.Marshal(cloudConfig{
		WriteFiles: files,
		RunCmd: [][]string{
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
