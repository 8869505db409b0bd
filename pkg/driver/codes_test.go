package driver_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/millwright-dev/millwright/pkg/driver"
)

func TestCodeNamesRoundTrip(t *testing.T) {
	for c := driver.OK; c <= driver.Uninitialized; c++ {
		got, err := driver.ParseCode(c.String())
		if err != nil || got != c {
			t.Errorf("ParseCode(%q) = %v, %v; want %v", c.String(), got, err, c)
		}
	}
	if driver.Uninitialized.String() != "Uninitialized" || driver.Code(17) != driver.Uninitialized {
		t.Errorf("Uninitialized must be code 17 named Uninitialized")
	}
	// The first 17 codes are gRPC's, so they cross gRPC unchanged.
	for c := driver.OK; c <= driver.Unauthenticated; c++ {
		if grpccodes.Code(c).String() != c.String() {
			t.Errorf("code %d is %s in gRPC but %s here", c, grpccodes.Code(c), c)
		}
	}
	if _, err := driver.ParseCode("Quota"); err == nil {
		t.Error("ParseCode accepted an unknown name")
	}
	if s := driver.Code(42).String(); s != "Code(42)" {
		t.Errorf("Code(42).String() = %q", s)
	}
}

func TestCodeOf(t *testing.T) {
	cases := []struct {
		name    string
		err     error
		code    driver.Code
		message string
	}{
		{"nil", nil, driver.OK, ""},
		{"driver error", driver.Errorf(driver.ResourceExhausted, "quota of %d cores reached", 8), driver.ResourceExhausted, "quota of 8 cores reached"},
		{"wrapped driver error", fmt.Errorf("creating: %w", driver.Errorf(driver.Uninitialized, "not yet")), driver.Uninitialized, "not yet"},
		{"grpc status", status.Error(grpccodes.Unavailable, "down"), driver.Unavailable, "down"},
		{"context deadline", fmt.Errorf("call: %w", context.DeadlineExceeded), driver.DeadlineExceeded, "call: context deadline exceeded"},
		{"context cancel", context.Canceled, driver.Canceled, "context canceled"},
		{"plain error", errors.New("boom"), driver.Unknown, "boom"},
	}
	for _, tc := range cases {
		if got := driver.CodeOf(tc.err); got != tc.code {
			t.Errorf("%s: CodeOf = %s; want %s", tc.name, got, tc.code)
		}
		if got := driver.MessageOf(tc.err); got != tc.message {
			t.Errorf("%s: MessageOf = %q; want %q", tc.name, got, tc.message)
		}
	}
	err := driver.Errorf(driver.InvalidArgument, "providerSpec.zones: must not be empty")
	if got := err.Error(); got != "InvalidArgument: providerSpec.zones: must not be empty" {
		t.Errorf("Error() = %q", got)
	}
	if s, ok := status.FromError(err); !ok || s.Code() != grpccodes.InvalidArgument {
		t.Errorf("a driver error must convert to a gRPC status with its code; got %v", s)
	}
}
