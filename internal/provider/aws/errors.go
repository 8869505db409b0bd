package aws

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// ErrorRow maps an EC2 (or STS) error code to the driver code the driver
// answers with, which decides what the manager does (docs/driver-errors.md).
type ErrorRow struct {
	// EC2Code is the error code, or a prefix ending in ".*".
	EC2Code string
	// Code is the driver code.
	Code driver.Code
	// Why is what the code means for a Machine, for the docs.
	Why string
}

// ErrorTable is every EC2 error code the driver knows, in the order
// docs/providers/aws.md shows them (TestDocsShowTheErrorTable checks it).
// A code not in it is Unavailable when EC2 answered with a 5xx status,
// else Unknown (retried with the short backoff).
var ErrorTable = []ErrorRow{
	{"InsufficientInstanceCapacity", driver.ResourceExhausted, "the zone has no capacity for the type: the next capacity type, then another zone"},
	{"InsufficientCapacity", driver.ResourceExhausted, "the same, for the request as a whole"},
	{"InstanceLimitExceeded", driver.ResourceExhausted, "the account's instance quota: retried with the long backoff"},
	{"VcpuLimitExceeded", driver.ResourceExhausted, "the account's vCPU quota"},
	{"MaxSpotInstanceCountExceeded", driver.ResourceExhausted, "the spot quota: the next capacity type"},
	{"SpotMaxPriceTooLow", driver.ResourceExhausted, "spot costs more than spotMaxPrice: the next capacity type"},
	{"InsufficientFreeAddressesInSubnet", driver.ResourceExhausted, "the zone's subnet is full"},
	{"Unsupported", driver.ResourceExhausted, "the type is not offered in the zone: another zone"},
	{"RequestLimitExceeded", driver.Unavailable, "throttled, after the SDK's retries"},
	{"InternalError", driver.Unavailable, "EC2 failed (5xx), after the SDK's retries"},
	{"ServiceUnavailable", driver.Unavailable, "EC2 failed (5xx), after the SDK's retries"},
	{"Unavailable", driver.Unavailable, "EC2 failed (5xx), after the SDK's retries"},
	{"IdempotentParameterMismatch", driver.Aborted, "an earlier create of the Machine used other parameters: retried, and the next call finds its instance"},
	{"IncorrectInstanceState", driver.Aborted, "the instance is changing state: retried"},
	{"InvalidAMIID.*", driver.InvalidArgument, "providerSpec.ami does not exist or is not usable"},
	{"InvalidParameterValue", driver.InvalidArgument, "a providerSpec value EC2 refuses"},
	{"InvalidParameterCombination", driver.InvalidArgument, "providerSpec values EC2 refuses together"},
	{"InvalidParameter", driver.InvalidArgument, "a providerSpec value EC2 refuses"},
	{"MissingParameter", driver.InvalidArgument, "a value EC2 needs is missing"},
	{"InvalidSubnetID.NotFound", driver.InvalidArgument, "a subnet of providerSpec does not exist"},
	{"InvalidGroup.NotFound", driver.InvalidArgument, "a group of providerSpec.securityGroupIDs does not exist"},
	{"InvalidKeyPair.NotFound", driver.InvalidArgument, "providerSpec.keyName does not exist"},
	{"InvalidBlockDeviceMapping", driver.InvalidArgument, "providerSpec.blockDevices do not fit the AMI"},
	{"AuthFailure", driver.PermissionDenied, "the credentials are refused"},
	{"UnauthorizedOperation", driver.PermissionDenied, "the IAM policy does not allow the call"},
	{"AccessDenied", driver.PermissionDenied, "STS refuses to assume roleARN"},
	{"OptInRequired", driver.PermissionDenied, "the account is not subscribed to EC2 or the AMI"},
	{"Blocked", driver.PermissionDenied, "the account is blocked"},
	{"InvalidClientTokenId", driver.Unauthenticated, "STS does not know the access key"},
	{"SignatureDoesNotMatch", driver.Unauthenticated, "the secret key is wrong"},
	{"ExpiredToken", driver.Unauthenticated, "the session token has expired"},
	{"InvalidInstanceID.NotFound", driver.NotFound, "the instance is gone (DeleteMachine: done)"},
}

// ConditionRow is an error that has no EC2 code.
type ConditionRow struct {
	// Condition says what happened.
	Condition string
	// Code is the driver code.
	Code driver.Code
}

// ConditionTable is the errors without an EC2 code, in the order
// docs/providers/aws.md shows them.
var ConditionTable = []ConditionRow{
	{"another code with an HTTP 5xx status", driver.Unavailable},
	{"another code", driver.Unknown},
	{"EC2 unreachable (connection refused, DNS, TLS, timeout)", driver.Unavailable},
	{"no credentials (none in the Secret, none in the default chain)", driver.Unauthenticated},
	{"the call's deadline passed", driver.DeadlineExceeded},
	{"the call was cancelled", driver.Canceled},
}

// codeOf finds an EC2 error code in the table.
func codeOf(ec2Code string) (driver.Code, bool) {
	for _, r := range ErrorTable {
		if p, ok := strings.CutSuffix(r.EC2Code, "*"); ok && strings.HasPrefix(ec2Code, p) || r.EC2Code == ec2Code {
			return r.Code, true
		}
	}
	return 0, false
}

// apiCode is the EC2 error code of err; "" when err is not an API error.
func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// classify maps an error of the SDK to a driver code (docs/providers/aws.md,
// "Errors").
func classify(ctx context.Context, err error) driver.Code {
	switch {
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() == context.DeadlineExceeded:
		return driver.DeadlineExceeded
	case errors.Is(err, context.Canceled) || ctx.Err() == context.Canceled:
		return driver.Canceled
	}
	if c := apiCode(err); c != "" {
		if code, ok := codeOf(c); ok {
			return code
		}
		var re *smithyhttp.ResponseError
		if errors.As(err, &re) && re.HTTPStatusCode() >= 500 {
			return driver.Unavailable
		}
		return driver.Unknown
	}
	var ne net.Error
	var oe *net.OpError
	var se *v4.SigningError
	var ce *credentialsError
	var re *smithyhttp.ResponseError
	switch {
	case errors.As(err, &ne) || errors.As(err, &oe):
		return driver.Unavailable
	case errors.As(err, &re) && re.HTTPStatusCode() >= 500:
		return driver.Unavailable
	case errors.As(err, &re):
		return driver.Unknown
	case errors.As(err, &ce) || errors.As(err, &se):
		return driver.Unauthenticated
	}
	// What the retryer ran out of: connection errors it cannot name
	// (a reset, an unexpected EOF) are transient.
	return driver.Unavailable
}

// ec2Error is err as a driver error: the code classify picks, and a
// message that says what was being done and what EC2 said.
func ec2Error(ctx context.Context, err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	code := classify(ctx, err)
	msg := err.Error()
	var ae smithy.APIError
	if errors.As(err, &ae) {
		msg = ae.ErrorCode() + ": " + ae.ErrorMessage()
	}
	switch code {
	case driver.Unavailable:
		if apiCode(err) == "" {
			msg = "EC2 unreachable: " + msg
		}
	case driver.Unauthenticated:
		msg = "no usable AWS credentials (give the class a credentials Secret, or the driver the default chain's): " + msg
	}
	return driver.Errorf(code, "%s: %s", what, msg)
}
