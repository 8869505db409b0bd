package nodeagent

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/millwright-dev/millwright/internal/cabundle"
)

// Where the TokenBootstrapConfig provider's user data puts the bootstrap
// kubeconfig (kubeadm's path) and the Machine's spec.version, and the flag
// of the kubelet drop-in that names the Node. The agent reads these and
// nothing else; runcmd and the other kubelet flags are for a real kubelet.
const (
	BootstrapKubeconfigPath = "/etc/kubernetes/bootstrap-kubelet.conf"
	VersionPath             = "/etc/millwright/kubernetes-version"
	hostnameOverrideFlag    = "--hostname-override="
)

// JoinConfig is everything the agent needs to join.
type JoinConfig struct {
	// Server is the API server's URL; CA (PEM certificates, required:
	// cabundle.Parse) authenticates it.
	Server string
	CA     []byte
	// Token is the bootstrap token, "id.secret".
	Token string
	// NodeName is the Node to register.
	NodeName string
	// ProviderID is the Node's spec.providerID (meta-data provider-id).
	ProviderID string
	// InstanceID is the machine's ID (meta-data instance-id, the Machine's
	// UID); reported as the Node's machine ID when the system has none.
	InstanceID string
	// Version is the Kubernetes version the node starts with (the
	// Machine's spec.version, VersionPath in the user data); empty: none
	// given, the agent reports its built-in KubeletVersion.
	Version string
}

// MetaData is the cloud-init NoCloud meta-data the agent reads.
type MetaData struct {
	InstanceID    string `json:"instance-id"`
	LocalHostname string `json:"local-hostname"`
	// ProviderID is Millwright's extension: the providerID the Node must
	// carry so the Machine finds it.
	ProviderID string `json:"provider-id"`
}

type cloudConfig struct {
	WriteFiles []struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	} `json:"write_files"`
}

var hostnameOverride = regexp.MustCompile(regexp.QuoteMeta(hostnameOverrideFlag) + `(\S+)`)

// ParseSeed reads a NoCloud seed's user-data and meta-data into a
// JoinConfig. The version is VersionPath's content when there is one. The node name is meta-data local-hostname, else the
// kubelet's --hostname-override in the user data.
func ParseSeed(userData, metaData []byte) (JoinConfig, error) {
	var md MetaData
	if err := yaml.Unmarshal(metaData, &md); err != nil {
		return JoinConfig{}, fmt.Errorf("meta-data: %w", err)
	}
	if !strings.HasPrefix(string(userData), "#cloud-config") {
		return JoinConfig{}, errors.New("user-data: not a #cloud-config document")
	}
	var cc cloudConfig
	if err := yaml.Unmarshal(userData, &cc); err != nil {
		return JoinConfig{}, fmt.Errorf("user-data: %w", err)
	}
	cfg := JoinConfig{ProviderID: md.ProviderID, InstanceID: md.InstanceID}
	found := false
	for _, f := range cc.WriteFiles {
		if f.Path == BootstrapKubeconfigPath {
			if err := cfg.readKubeconfig([]byte(f.Content)); err != nil {
				return JoinConfig{}, fmt.Errorf("user-data: %s: %w", f.Path, err)
			}
			found = true
		}
		if f.Path == VersionPath {
			v := strings.TrimSpace(f.Content)
			if !versionPattern.MatchString(v) {
				return JoinConfig{}, fmt.Errorf("user-data: %s: %q is not a Kubernetes version (vX.Y.Z)", f.Path, v)
			}
			cfg.Version = v
		}
		if m := hostnameOverride.FindStringSubmatch(f.Content); m != nil {
			cfg.NodeName = m[1]
		}
	}
	if !found {
		return JoinConfig{}, fmt.Errorf("user-data: no write_files entry for %s", BootstrapKubeconfigPath)
	}
	// The provider's name wins: it is the one the Machine waits for, and a
	// provider renames a Node whose Machine's name another namespace's
	// Machine already gave a Node.
	if md.LocalHostname != "" {
		cfg.NodeName = md.LocalHostname
	}
	if cfg.NodeName == "" {
		return JoinConfig{}, fmt.Errorf("no node name: neither %s in the user data nor local-hostname in meta-data", hostnameOverrideFlag)
	}
	if cfg.ProviderID == "" {
		return JoinConfig{}, errors.New("meta-data: no provider-id")
	}
	return cfg, nil
}

// readKubeconfig takes the server, CA and token of the bootstrap
// kubeconfig's current context.
func (c *JoinConfig) readKubeconfig(data []byte) error {
	kc, err := clientcmd.Load(data)
	if err != nil {
		return err
	}
	ctx := kc.Contexts[kc.CurrentContext]
	if ctx == nil {
		return fmt.Errorf("no current context %q", kc.CurrentContext)
	}
	cluster, user := kc.Clusters[ctx.Cluster], kc.AuthInfos[ctx.AuthInfo]
	if cluster == nil || user == nil {
		return fmt.Errorf("context %q lacks its cluster or user", kc.CurrentContext)
	}
	if cluster.Server == "" || user.Token == "" {
		return errors.New("no server or no token")
	}
	// Refused here, before the token is used: a join without the
	// cluster's CA could get its certificate, but never use it.
	if _, err := cabundle.Parse(cluster.CertificateAuthorityData); err != nil {
		return fmt.Errorf("certificate-authority-data: %w", err)
	}
	c.Server, c.CA, c.Token = cluster.Server, cluster.CertificateAuthorityData, user.Token
	return nil
}
