package aws

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/internal/motoserver"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// statusOf is the HTTP status EC2 answers an error code with.
func statusOf(code string) int {
	switch code {
	case "RequestLimitExceeded", "ServiceUnavailable", "Unavailable":
		return http.StatusServiceUnavailable
	case "InternalError":
		return http.StatusInternalServerError
	case "AuthFailure":
		return http.StatusUnauthorized
	case "UnauthorizedOperation", "AccessDenied", "OptInRequired", "Blocked":
		return http.StatusForbidden
	}
	return http.StatusBadRequest
}

// retried reports whether the SDK's retryer tries a code again.
func retried(code driver.Code) bool { return code == driver.Unavailable }

// TestErrorTableRowByRow answers RunInstances with each EC2 error code of
// the table, through the proxy in front of moto (EC2's error XML, EC2's
// status), and checks CreateMachine's driver code, that the retryer
// retried exactly the transient ones, and that no instance was made.
func TestErrorTableRowByRow(t *testing.T) {
	p := motoserver.NewProxy(t, moto.URL)
	d := newDriver(t, p.URL)
	c := class("errors", validSpec)
	for i, row := range ErrorTable {
		codes := []string{row.EC2Code}
		if prefix, ok := strings.CutSuffix(row.EC2Code, "*"); ok {
			codes = []string{prefix + "NotFound", prefix + "Malformed"}
		}
		for _, code := range codes {
			t.Run(code, func(t *testing.T) {
				p.Clear()
				f := p.Fail(&motoserver.Fault{Action: "RunInstances", Code: code, Status: statusOf(code)})
				m := machine("errors-" + strings.ToLower(strings.ReplaceAll(code, ".", "-")))
				_, err := d.CreateMachine(ctxT(t), &driver.CreateMachineRequest{Machine: m, MachineClass: c, Secret: testSecret()})
				if got := driver.CodeOf(err); got != row.Code {
					t.Errorf("row %d: RunInstances answering %s: CreateMachine %v; want %s", i, code, err, row.Code)
				}
				if !strings.Contains(driver.MessageOf(err), code) {
					t.Errorf("the message %q does not say EC2's code %s", driver.MessageOf(err), code)
				}
				want := 1
				if retried(row.Code) {
					want = d.opts.RetryMaxAttempts
				}
				if got := p.Hits(f); got != want {
					t.Errorf("RunInstances was tried %d times; want %d", got, want)
				}
			})
		}
	}
	if live := clusterInstances(t); len(live) != 0 {
		t.Errorf("%d instances were made although every launch was refused", len(live))
	}
}

// TestConditionTable checks each error without an EC2 code.
func TestConditionTable(t *testing.T) {
	p := motoserver.NewProxy(t, moto.URL)
	c := class("conditions", validSpec)
	call := func(t *testing.T, d *Driver, ctx context.Context, secret bool) error {
		req := &driver.CreateMachineRequest{Machine: machine("conditions-" + strings.ToLower(t.Name()[len("TestConditionTable/"):])), MachineClass: c}
		if secret {
			req.Secret = testSecret()
		}
		_, err := d.CreateMachine(ctx, req)
		return err
	}
	expired, cancelExpired := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelExpired()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		row   int
		setup func() (*Driver, context.Context, bool)
		what  string // in the message
	}{
		{0, func() (*Driver, context.Context, bool) {
			p.Clear()
			p.Fail(&motoserver.Fault{Action: "RunInstances", Code: "SomethingNew", Status: 500})
			return newDriver(t, p.URL), ctxT(t), true
		}, "SomethingNew"},
		{1, func() (*Driver, context.Context, bool) {
			p.Clear()
			p.Fail(&motoserver.Fault{Action: "RunInstances", Code: "SomethingNew", Status: 400})
			return newDriver(t, p.URL), ctxT(t), true
		}, "SomethingNew"},
		{2, func() (*Driver, context.Context, bool) {
			return newDriver(t, "http://127.0.0.1:1"), ctxT(t), true
		}, "EC2 unreachable"},
		{3, func() (*Driver, context.Context, bool) { return newDriver(t, ""), ctxT(t), false }, "no usable AWS credentials"},
		{4, func() (*Driver, context.Context, bool) { return newDriver(t, ""), expired, true }, "deadline"},
		{5, func() (*Driver, context.Context, bool) { return newDriver(t, ""), cancelled, true }, "cancel"},
	} {
		row := ConditionTable[tc.row]
		t.Run(strings.Fields(row.Condition)[0]+strings.Fields(row.Condition)[1], func(t *testing.T) {
			d, ctx, secret := tc.setup()
			err := call(t, d, ctx, secret)
			if driver.CodeOf(err) != row.Code || !strings.Contains(driver.MessageOf(err), tc.what) {
				t.Errorf("%s: %v; want %s saying %q", row.Condition, err, row.Code, tc.what)
			}
		})
	}
	if live := clusterInstances(t); len(live) != 0 {
		t.Errorf("%d instances were made", len(live))
	}
}
