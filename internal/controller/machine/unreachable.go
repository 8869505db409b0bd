package machine

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// targetUnreachable reports whether err says the target cluster's API
// server could not be reached or could not serve (a connection refused, a
// timeout, an unavailable or failing server), as opposed to an answer such
// as Forbidden or NotFound. Only then may a deletion give up on the target
// cluster once its timeouts pass (docs/drain.md).
func targetUnreachable(err error) bool {
	if err == nil {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true // no answer at all: the connection failed
	}
	return apierrors.IsServiceUnavailable(err) || apierrors.IsTimeout(err) ||
		apierrors.IsServerTimeout(err) || apierrors.IsInternalError(err)
}
