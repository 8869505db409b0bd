package machine

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestTargetUnreachable(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"no error", nil, false},
		{"connection refused", fmt.Errorf("listing pods: %w", syscall.ECONNREFUSED), true},
		{"client-go's failed request", &url.Error{Op: "Get", URL: "https://target/api", Err: io.EOF}, true},
		{"an error that is not the cluster's (a driver's)", errors.New("volume IDs: quota"), false},
		{"unavailable", apierrors.NewServiceUnavailable("etcd down"), true},
		{"server timeout", apierrors.NewServerTimeout(pods, "list", 1), true},
		{"internal error: a failing webhook, the server answers", apierrors.NewInternalError(errors.New("boom")), false},
		{"forbidden: a configuration error, not an outage", apierrors.NewForbidden(pods, "x", errors.New("rbac")), false},
		{"not found", fmt.Errorf("wrapped: %w", apierrors.NewNotFound(pods, "x")), false},
	}
	for _, tc := range cases {
		if got := targetUnreachable(tc.err); got != tc.want {
			t.Errorf("%s: targetUnreachable = %v, want %v", tc.name, got, tc.want)
		}
	}
}
