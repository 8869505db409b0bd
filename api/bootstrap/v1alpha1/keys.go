package v1alpha1

import "time"

// The finalizer, condition types, reasons and defaults of the token
// bootstrap provider's kinds, one line of meaning each. Millwright's core
// reads only the contract fields (status.dataSecretName, status.ready,
// status.initialization.dataSecretCreated, status.failureReason and
// failureMessage); the conditions and reasons are for people and tests.
const (
	// TokenBootstrapConfigFinalizer holds a TokenBootstrapConfig until its
	// bootstrap token (in the target cluster) and its user-data Secret are deleted.
	TokenBootstrapConfigFinalizer = GroupName + "/tokenbootstrapconfig"

	// ReadyCondition is True once the user-data Secret exists and the
	// Machine can boot with it; it says what is missing otherwise.
	ReadyCondition = "Ready"
	// PausedCondition is True while the TokenBootstrapConfig or its Machine
	// carries the machine.millwright.dev/paused annotation.
	PausedCondition = "Paused"

	// ReadyReasonReady: the token and the user-data Secret exist (Ready True).
	ReadyReasonReady = "Ready"
	// ReadyReasonJoined: the Machine's Node joined and its token was deleted
	// (Ready True: the user data stays, its token no longer works).
	ReadyReasonJoined = "Joined"
	// ReadyReasonMachineFailed: the Machine failed before its Node joined
	// and its token was deleted (Ready True, as after a join: the user
	// data stays, its token no longer works).
	ReadyReasonMachineFailed = "MachineFailed"
	// ReadyReasonWaitingForOwner: no Machine owns the config yet; the
	// Machine controller adopts it from its spec.bootstrap.configRef.
	ReadyReasonWaitingForOwner = "WaitingForOwner"
	// ReadyReasonFailed: a terminal failure; see status.failureReason.
	ReadyReasonFailed = "Failed"
	// ReadyReasonDeleting: the token and the user-data Secret are being deleted.
	ReadyReasonDeleting = "Deleting"

	// PausedReasonPaused: the paused annotation is set (Paused True).
	PausedReasonPaused = "Paused"
	// PausedReasonNotPaused: no paused annotation (Paused False).
	PausedReasonNotPaused = "NotPaused"

	// FailureReasonInvalidConfiguration: the spec can never work (a CA
	// bundle that is not PEM, no API server URL known, ...).
	FailureReasonInvalidConfiguration = "InvalidConfiguration"
	// FailureReasonTokenConflict: the target cluster holds a bootstrap
	// token with this config's token ID that belongs to someone else; the
	// ID derives from the config's UID, so only a new Machine can fix it.
	FailureReasonTokenConflict = "TokenConflict"

	// DataSecretKey is the key of the bootstrap data in the user-data
	// Secret, as the contract says.
	DataSecretKey = "value"
	// DataSecretFormatKey says the bootstrap data's format ("cloud-config").
	DataSecretFormatKey = "format"
	// DataSecretTokenKey holds the bootstrap token ("id.secret") the user
	// data carries, so that a token lost in the target cluster (expired and
	// collected while the manager was down) is made again with the same value.
	DataSecretTokenKey = "token"

	// DefaultTokenTTL is the lifetime of a token when spec.tokenTTL is
	// unset: long enough for a VM to boot and join, short enough that a
	// leaked user-data Secret is soon useless. The controller extends it
	// while the Machine has not joined, so slow boots are not cut off.
	DefaultTokenTTL = 15 * time.Minute
)
