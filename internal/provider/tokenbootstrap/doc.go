// Package tokenbootstrap is the token bootstrap provider's controller: it
// reconciles TokenBootstrapConfigs (bootstrap.millwright.dev/v1alpha1) into
// the bootstrap data of their Machines (the bootstrap provider of
// docs/contract-providers.md).
//
// For a config owned by a Machine it makes a bootstrap token in the target
// cluster (kube-system/bootstrap-token-<id>, ID derived from the config's
// UID, so a retry never makes a second token) and a user-data Secret in the
// config's namespace, named after the config and owned by it, whose key
// "value" is a cloud-init document: it writes a bootstrap kubeconfig (API
// server URL, CA, token) and starts the kubelet with --bootstrap-kubeconfig
// under the Machine's name. The config then reports status.dataSecretName,
// status.ready and status.initialization.dataSecretCreated, which the
// Machine controller copies to the Machine.
//
// The token lives spec.tokenTTL; while the Machine has no Node it is
// extended before half of that is left, so a slow boot is not cut off,
// and once the Machine reports a nodeRef it is deleted: the kubelet has its
// own credentials by then. Deleting the config deletes the token
// (finalizer bootstrap.millwright.dev/tokenbootstrapconfig); the garbage
// collector deletes the user-data Secret with it, its owner.
// The machine.millwright.dev/paused annotation on the config or its
// Machine stops everything but the Paused condition.
package tokenbootstrap
