package driverpolicy_test

import (
	"strings"
	"testing"

	"github.com/millwright-dev/millwright/internal/driverpolicy"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// seedRows transcribes the Machine Controller Manager's error-code tables
// (docs/driver-errors.md): method, code and the
// "Auto Retry Required" column, one row each.
var seedRows = map[driver.Method]string{
	driver.MethodCreateMachine: `
0 OK N | 1 CANCELED N | 2 UNKNOWN Y | 3 INVALID_ARGUMENT N | 4 DEADLINE_EXCEEDED Y |
6 ALREADY_EXISTS N | 7 PERMISSION_DENIED N | 8 RESOURCE_EXHAUSTED N | 9 PRECONDITION_FAILED N |
10 ABORTED Y | 11 OUT_OF_RANGE N | 12 UNIMPLEMENTED N | 13 INTERNAL N | 14 UNAVAILABLE Y |
16 UNAUTHENTICATED N`,
	driver.MethodInitializeMachine: `
0 OK N | 5 NOT_FOUND N | 12 UNIMPLEMENTED N | 13 INTERNAL Y | 17 UNINITIALIZED Y`,
	driver.MethodDeleteMachine: `
0 OK N | 1 CANCELED N | 2 UNKNOWN Y | 3 INVALID_ARGUMENT N | 4 DEADLINE_EXCEEDED Y |
7 PERMISSION_DENIED N | 9 PRECONDITION_FAILED N | 10 ABORTED Y | 12 UNIMPLEMENTED N |
13 INTERNAL N | 14 UNAVAILABLE Y | 16 UNAUTHENTICATED N`,
	driver.MethodGetMachineStatus: `
0 OK N | 1 CANCELED N | 2 UNKNOWN Y | 3 INVALID_ARGUMENT N | 4 DEADLINE_EXCEEDED Y |
5 NOT_FOUND N | 7 PERMISSION_DENIED N | 9 PRECONDITION_FAILED N | 11 OUT_OF_RANGE Y |
12 UNIMPLEMENTED N | 13 INTERNAL N | 14 UNAVAILABLE Y | 16 UNAUTHENTICATED N | 17 UNINITIALIZED N`,
	driver.MethodListMachines: `
0 OK N | 1 CANCELED N | 2 UNKNOWN Y | 3 INVALID_ARGUMENT N | 4 DEADLINE_EXCEEDED Y |
7 PERMISSION_DENIED N | 12 UNIMPLEMENTED N | 13 INTERNAL N | 14 UNAVAILABLE Y | 16 UNAUTHENTICATED N`,
	driver.MethodGetVolumeIDs: `
0 OK N | 1 CANCELED N | 2 UNKNOWN Y | 3 INVALID_ARGUMENT N | 4 DEADLINE_EXCEEDED Y |
12 UNIMPLEMENTED N | 13 INTERNAL N | 14 UNAVAILABLE Y`,
}

// deviations are the rows where Millwright retries although the original says
// "N"; each is documented on the recovery table.
var deviations = map[driver.Method]map[driver.Code]bool{
	driver.MethodCreateMachine:    {driver.Canceled: true, driver.ResourceExhausted: true},
	driver.MethodDeleteMachine:    {driver.Canceled: true},
	driver.MethodGetMachineStatus: {driver.Canceled: true},
	driver.MethodListMachines:     {driver.Canceled: true},
	driver.MethodGetVolumeIDs:     {driver.Canceled: true},
}

func TestEverySeedRowIsInTheRecoveryTable(t *testing.T) {
	rows := 0
	for method, table := range seedRows {
		for _, cell := range strings.Split(table, "|") {
			fields := strings.Fields(cell)
			if len(fields) != 3 {
				t.Fatalf("bad transcription %q", cell)
			}
			code := codeNumber(t, fields[0])
			autoRetry := fields[2] == "Y"
			rows++
			t.Run(string(method)+"/"+code.String(), func(t *testing.T) {
				got := driverpolicy.Classify(method, code)
				if got.AutoRetry != autoRetry {
					t.Errorf("AutoRetry = %v; the original says %s", got.AutoRetry, fields[2])
				}
				if code != driver.OK && got.Recovery == "" {
					t.Errorf("no recovery text")
				}
				switch {
				case autoRetry && !got.Retryable():
					t.Errorf("the original retries it automatically, the table says %s", got.Action)
				case !autoRetry && got.Retryable() && !deviations[method][code]:
					t.Errorf("the original does not retry it, the table says %s and no deviation is documented", got.Action)
				}
			})
		}
	}
	if rows != 64 {
		t.Fatalf("transcribed %d rows; the original tables have 64", rows)
	}
}

func codeNumber(t *testing.T, s string) driver.Code {
	t.Helper()
	for c := driver.OK; c.Valid(); c++ {
		if strings.TrimSpace(s) == itoa(uint32(c)) {
			return c
		}
	}
	t.Fatalf("no code %q", s)
	return 0
}

func itoa(n uint32) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return string(rune('0'+n/10)) + string(rune('0'+n%10))
}

// TestNextSteps pins the actions the machine controller depends on.
func TestNextSteps(t *testing.T) {
	cases := []struct {
		method driver.Method
		code   driver.Code
		want   driverpolicy.Action
	}{
		{driver.MethodCreateMachine, driver.OK, driverpolicy.Continue},
		{driver.MethodCreateMachine, driver.Unavailable, driverpolicy.Retry},
		{driver.MethodCreateMachine, driver.ResourceExhausted, driverpolicy.RetryLong},
		{driver.MethodCreateMachine, driver.InvalidArgument, driverpolicy.Terminal},
		{driver.MethodCreateMachine, driver.Unauthenticated, driverpolicy.Terminal},
		{driver.MethodInitializeMachine, driver.Unimplemented, driverpolicy.SkipStep},
		{driver.MethodInitializeMachine, driver.NotFound, driverpolicy.SkipStep},
		{driver.MethodInitializeMachine, driver.Uninitialized, driverpolicy.Retry},
		{driver.MethodGetMachineStatus, driver.NotFound, driverpolicy.CreateVM},
		{driver.MethodGetMachineStatus, driver.Unimplemented, driverpolicy.CreateVM},
		{driver.MethodGetMachineStatus, driver.Uninitialized, driverpolicy.InitializeVM},
		{driver.MethodGetMachineStatus, driver.OutOfRange, driverpolicy.CollectOrphans},
		{driver.MethodDeleteMachine, driver.NotFound, driverpolicy.Continue},
		{driver.MethodDeleteMachine, driver.PermissionDenied, driverpolicy.Terminal},
		{driver.MethodListMachines, driver.Unimplemented, driverpolicy.SkipStep},
		{driver.MethodGetVolumeIDs, driver.Unimplemented, driverpolicy.SkipStep},
		{driver.MethodUpdateMachine, driver.Unimplemented, driverpolicy.SkipStep},
		{driver.MethodUpdateMachine, driver.FailedPrecondition, driverpolicy.Replace},
		{driver.MethodUpdateMachine, driver.Internal, driverpolicy.Terminal},
		// Codes a method's table does not list fall back to their general meaning.
		{driver.MethodDeleteMachine, driver.ResourceExhausted, driverpolicy.RetryLong},
		{driver.MethodInitializeMachine, driver.Unavailable, driverpolicy.Retry},
		{driver.MethodInitializeMachine, driver.DataLoss, driverpolicy.Terminal},
		{driver.MethodListMachines, driver.Code(99), driverpolicy.Terminal},
	}
	for _, tc := range cases {
		if got := driverpolicy.Classify(tc.method, tc.code); got.Action != tc.want {
			t.Errorf("Classify(%s, %s) = %s; want %s", tc.method, tc.code, got.Action, tc.want)
		}
	}
}
