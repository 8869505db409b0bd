package nodeagent

import (
	"fmt"
	"regexp"

	"k8s.io/apimachinery/pkg/util/version"
)

// versionPattern is a Kubernetes release version, vX.Y.Z with an optional
// pre-release (v1.36.0-rc.1): the pattern the Machine's spec.version is
// validated against at admission.
var versionPattern = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z][0-9A-Za-z.-]*)?$`)

// maxKubeletSkew is how many minor versions a kubelet may be older than
// the API server (the Kubernetes version skew policy).
const maxKubeletSkew = 3

// refuseVersion says why the agent does not update to v on a cluster whose
// API server reports serverVersion (its /version gitVersion), or "" when
// it may: v must be a release version, of the API server's major version,
// not of a newer minor (a kubelet must never be newer than the API
// server) and at most maxKubeletSkew minors older.
func refuseVersion(v, serverVersion string) string {
	if !versionPattern.MatchString(v) {
		return fmt.Sprintf("%q is not a Kubernetes version (vX.Y.Z or vX.Y.Z-pre)", v)
	}
	want := version.MustParseSemantic(v)
	server, err := version.ParseGeneric(serverVersion)
	if err != nil {
		return fmt.Sprintf("cannot check %s against the API server's version %q: %v", v, serverVersion, err)
	}
	switch {
	case want.Major() != server.Major():
		return fmt.Sprintf("%s is not of the API server's major version (%s)", v, serverVersion)
	case want.Minor() > server.Minor():
		return fmt.Sprintf("%s is newer than the API server (%s): a kubelet may not be newer than the API server (version skew policy)", v, serverVersion)
	case want.Minor()+maxKubeletSkew < server.Minor():
		return fmt.Sprintf("%s is more than %d minor versions older than the API server (%s) (version skew policy)", v, maxKubeletSkew, serverVersion)
	}
	return ""
}
