package driver

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Code is a machine error code: the gRPC status codes 0–16 plus
// Uninitialized (17). Drivers return them; Millwright decides from them
// whether and how to retry (the manager's policy, docs/driver-errors.md).
type Code uint32

// The machine error codes.
const (
	OK                 Code = 0
	Canceled           Code = 1
	Unknown            Code = 2
	InvalidArgument    Code = 3
	DeadlineExceeded   Code = 4
	NotFound           Code = 5
	AlreadyExists      Code = 6
	PermissionDenied   Code = 7
	ResourceExhausted  Code = 8
	FailedPrecondition Code = 9
	Aborted            Code = 10
	OutOfRange         Code = 11
	Unimplemented      Code = 12
	Internal           Code = 13
	Unavailable        Code = 14
	DataLoss           Code = 15
	Unauthenticated    Code = 16
	// Uninitialized: the VM exists but its initialization failed or has not
	// run; InitializeMachine is called again.
	Uninitialized Code = 17
)

var codeNames = [...]string{
	"OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound",
	"AlreadyExists", "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
	"Aborted", "OutOfRange", "Unimplemented", "Internal", "Unavailable", "DataLoss",
	"Unauthenticated", "Uninitialized",
}

// String returns the code's name, e.g. "ResourceExhausted".
func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "Code(" + strconv.FormatUint(uint64(c), 10) + ")"
}

// Valid reports whether c is one of the defined codes.
func (c Code) Valid() bool { return int(c) < len(codeNames) }

// ParseCode returns the code with the given name (as String returns it).
func ParseCode(name string) (Code, error) {
	for i, n := range codeNames {
		if n == name {
			return Code(i), nil
		}
	}
	return Unknown, fmt.Errorf("unknown machine error code %q", name)
}

// Error is an error with a machine error code and a message for people.
type Error struct {
	Code    Code
	Message string
}

// Error implements error.
func (e *Error) Error() string {
	return e.Code.String() + ": " + e.Message
}

// GRPCStatus lets gRPC servers send the code and message unchanged.
func (e *Error) GRPCStatus() *status.Status {
	return status.New(grpccodes.Code(e.Code), e.Message)
}

// Errorf returns an error with the code and a formatted message. The
// message must say, for a person, what went wrong: Millwright shows it in
// the Machine's status.
func Errorf(code Code, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// CodeOf returns the machine error code of err: OK for nil, the code of an
// *Error or a gRPC status anywhere in its chain, DeadlineExceeded or
// Canceled for context errors, and Unknown for anything else.
func CodeOf(err error) Code {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	var s interface{ GRPCStatus() *status.Status }
	if errors.As(err, &s) {
		return Code(s.GRPCStatus().Code())
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return Canceled
	}
	return Unknown
}

// MessageOf returns the message of err without its code: the message of an
// *Error or gRPC status, or err.Error() otherwise. Empty for nil.
func MessageOf(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	var s interface{ GRPCStatus() *status.Status }
	if errors.As(err, &s) {
		return s.GRPCStatus().Message()
	}
	return err.Error()
}
