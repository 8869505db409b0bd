package nodeagent

import (
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// InstanceDataPath is where cloud-init (22.4, Debian 12's) writes what its
// datasource read: for NoCloud, ds.meta_data is the seed's meta-data.
const InstanceDataPath = "/run/cloud-init/instance-data.json"

// instanceData is the part of cloud-init's instance-data.json the agent
// reads.
type instanceData struct {
	DS struct {
		MetaData *MetaData `json:"meta_data"`
	} `json:"ds"`
}

// ParseCloudInit is ParseSeed for an agent running as a service in an
// image that has cloud-init (docs/providers/node-agent.md, "In a cloud
// image"): cloud-init has already written the user data's files, so the
// agent reads the bootstrap kubeconfig (BootstrapKubeconfigPath) and the
// version (VersionPath; nil or empty: none) as files, and the meta-data
// from cloud-init's instance data. The node name is meta-data's
// local-hostname: the drop-in naming the kubelet is not read.
func ParseCloudInit(kubeconfig, version, instanceDataJSON []byte) (JoinConfig, error) {
	var id instanceData
	if err := yaml.Unmarshal(instanceDataJSON, &id); err != nil {
		return JoinConfig{}, fmt.Errorf("instance data: %w", err)
	}
	md := id.DS.MetaData
	if md == nil {
		return JoinConfig{}, errors.New("instance data: no ds.meta_data (is the datasource NoCloud?)")
	}
	cfg := JoinConfig{ProviderID: md.ProviderID, InstanceID: md.InstanceID, NodeName: md.LocalHostname}
	if err := cfg.readKubeconfig(kubeconfig); err != nil {
		return JoinConfig{}, fmt.Errorf("%s: %w", BootstrapKubeconfigPath, err)
	}
	if v := strings.TrimSpace(string(version)); v != "" {
		if !versionPattern.MatchString(v) {
			return JoinConfig{}, fmt.Errorf("%s: %q is not a Kubernetes version (vX.Y.Z)", VersionPath, v)
		}
		cfg.Version = v
	}
	if cfg.NodeName == "" {
		return JoinConfig{}, errors.New("instance data: meta-data has no local-hostname")
	}
	if cfg.ProviderID == "" {
		return JoinConfig{}, errors.New("instance data: meta-data has no provider-id")
	}
	return cfg, nil
}
