package machine

import (
	"errors"
	"net"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// targetUnreachable reports whether err says the target cluster's API
// server could not be reached or could not serve (a connection refused, a
// timeout, an unavailable server), as opposed to an answer such as
// Forbidden, NotFound or an InternalError (which a failing admission
// webhook returns: the server is up). Only then may a deletion give up on
// the target cluster once its timeouts pass (docs/drain.md).
func targetUnreachable(err error) bool {
	if err == nil {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		// No answer at all: only a failed connection (client-go wraps it
		// in a *url.Error, a net.Error) counts, not any other error.
		var netErr net.Error
		return errors.As(err, &netErr)
	}
	return apierrors.IsServiceUnavailable(err) || apierrors.IsTimeout(err) ||
		apierrors.IsServerTimeout(err)
}
