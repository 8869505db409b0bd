package localcluster

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The groups TLS bootstrap involves: every bootstrap token authenticates
// in the first, every node client certificate is in the second.
const (
	bootstrappersGroup = "system:bootstrappers"
	nodesGroup         = "system:nodes"
)

// nodeBootstrapRBAC are the ClusterRoleBindings kubeadm makes so that
// nodes join by TLS bootstrap (the roles are the API server's built-in
// ones): a bootstrap token may create a CSR for a node client certificate,
// kube-controller-manager's csrapproving controller approves such a CSR
// from a bootstrap token (nodeclient) and a node's renewal of its own
// certificate (selfnodeclient), and csrsigning then signs it.
var nodeBootstrapRBAC = []rbacv1.ClusterRoleBinding{
	binding("localcluster:kubelet-bootstrap", "system:node-bootstrapper", bootstrappersGroup),
	binding("localcluster:node-autoapprove-bootstrap", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", bootstrappersGroup),
	binding("localcluster:node-autoapprove-certificate-rotation", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", nodesGroup),
}

func binding(name, clusterRole, group string) rbacv1.ClusterRoleBinding {
	return rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: group}},
	}
}

// applyNodeBootstrapRBAC creates nodeBootstrapRBAC. It runs once the API
// server is ready, before kube-controller-manager starts, so a node may
// join as soon as the control plane is up.
func (c *Cluster) applyNodeBootstrapRBAC(ctx context.Context) error {
	for _, b := range nodeBootstrapRBAC {
		_, err := c.client.RbacV1().ClusterRoleBindings().Create(ctx, &b, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("localcluster: creating ClusterRoleBinding %s: %w", b.Name, err)
		}
	}
	return nil
}
