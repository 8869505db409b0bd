package machinefacts

import "github.com/millwright-dev/millwright/api/v1alpha1"

// ErrorCodeOutOfCapacity is the error code a Machine's
// status.lastOperation.errorCode records when its provider had no
// capacity for it: the name of the driver SDK's ResourceExhausted
// (docs/driver-errors.md). It is a fact of the API object, read here so
// that what decides from it (the deployment's zone capacity, the set's
// moves between zones) need not import the driver SDK;
// internal/driverpolicy's tests hold the two names equal.
const ErrorCodeOutOfCapacity = "ResourceExhausted"

// RefusedForCapacity reports whether m's VM was never created because the
// provider had no capacity in its zone: no providerID, and its last
// operation a Create that failed with ResourceExhausted
// (docs/failure-domains.md). The deployment takes the zone out of
// capacity from it; the set moves such a Machine to another zone.
func RefusedForCapacity(m *v1alpha1.Machine) bool {
	op := m.Status.LastOperation
	return m.Spec.ProviderID == "" && op.Type == v1alpha1.OperationCreate && op.State == v1alpha1.OperationFailed &&
		op.ErrorCode == ErrorCodeOutOfCapacity
}
