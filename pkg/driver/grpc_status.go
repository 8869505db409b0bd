package driver

import (
	"errors"
	"strings"

	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// toStatus turns a driver's error into the gRPC status the plugin sends:
// the machine code as the status code (17, Uninitialized, included: grpc-go
// sends and receives code numbers it does not know unchanged) and the
// message without the code's name, so the client rebuilds the same error.
//
// An error whose code is OK is a driver bug that gRPC cannot carry (an OK
// status is a success); it is sent as Unknown so the caller still sees a
// failure.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	code, msg := CodeOf(err), text(MessageOf(err))
	if code == OK {
		code, msg = Unknown, "driver failed with code OK: "+msg
	}
	return status.Error(grpccodes.Code(code), msg)
}

// text makes a message for people valid UTF-8, replacing what is not: a
// driver may quote bytes that are not text (a VM's serial console), and
// protobuf refuses to marshal a string field that is not UTF-8, which
// would turn the call's answer into Internal.
func text(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// fromStatus turns the error of a gRPC call into an *Error. Statuses the
// plugin sent keep their code and message; failures of the call itself
// already carry the code that fits them (Unavailable when the plugin is
// down, DeadlineExceeded, Canceled). A code outside the machine codes, which
// only a broken plugin sends, becomes Unknown with the number kept in the
// message.
func fromStatus(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		var e *Error
		if errors.As(err, &e) {
			return err
		}
		return &Error{Code: CodeOf(err), Message: err.Error()}
	}
	code := Code(st.Code())
	if !code.Valid() {
		return Errorf(Unknown, "plugin answered with code %d, which is not a machine error code: %s", st.Code(), st.Message())
	}
	return &Error{Code: code, Message: st.Message()}
}
