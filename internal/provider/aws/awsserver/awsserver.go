// Package awsserver is the millwright-aws program: the AWS EC2 driver
// (internal/provider/aws) served over gRPC like any out-of-process
// provider, with /healthz and /readyz over HTTP (ready while EC2 answers
// and, when the driver has default credentials, accepts them).
// cmd/millwright-aws only calls NewCommand, so this can be tested without
// building the binary.
package awsserver

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/millwright-dev/millwright/internal/cli"
	"github.com/millwright-dev/millwright/internal/provider/aws"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// readyTimeout bounds one /readyz check: an EC2 that does not answer in
// time is not ready.
const readyTimeout = 10 * time.Second

// Options are millwright-aws's settings, one field per flag.
type Options struct {
	// PluginFlags are the endpoint, name and log flags.
	cli.PluginFlags
	// HealthAddress serves /healthz and /readyz; empty: off.
	HealthAddress string
	// ClusterName names the cluster in the instances' cluster tag; required.
	ClusterName string
	// EC2Endpoint and STSEndpoint replace AWS's endpoints; empty: AWS's.
	EC2Endpoint, STSEndpoint string
	// Region is the region /readyz asks.
	Region string
	// RetryMaxAttempts and RetryMaxBackoff set the SDK's retryer.
	RetryMaxAttempts int
	RetryMaxBackoff  time.Duration
}

// NewOptions returns the defaults of every flag.
func NewOptions() *Options {
	return &Options{
		PluginFlags:      cli.NewPluginFlags(aws.DefaultName),
		HealthAddress:    "127.0.0.1:8092",
		Region:           "us-east-1",
		RetryMaxAttempts: aws.DefaultRetryMaxAttempts,
		RetryMaxBackoff:  aws.DefaultRetryMaxBackoff,
	}
}

// Run serves the driver until ctx ends, then stops gracefully. o must have
// passed Validate. An unreachable EC2 or refused credentials do not stop
// it: /readyz says why, and calls answer Unavailable (or
// PermissionDenied), so Machines wait or fail with the reason.
func Run(ctx context.Context, o *Options, log *slog.Logger) error {
	d, err := aws.New(aws.Options{Name: o.Name, ClusterName: o.ClusterName, Endpoint: o.EC2Endpoint, STSEndpoint: o.STSEndpoint,
		Logger: log, RetryMaxAttempts: o.RetryMaxAttempts, RetryMaxBackoff: o.RetryMaxBackoff})
	if err != nil {
		return &cli.UsageError{Err: err}
	}
	var healthLis net.Listener
	if o.HealthAddress != "" {
		if healthLis, err = net.Listen("tcp", o.HealthAddress); err != nil {
			return fmt.Errorf("health address: %w", err)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return driver.ServeEndpoint(gctx, o.Endpoint, d) })
	if healthLis != nil {
		cli.ServeHTTP(gctx, g, log, "health checks", healthLis, cli.HealthHandler(readyTimeout, func(ctx context.Context) error { return d.Ready(ctx, o.Region) }))
	}
	log.Info("aws driver running", "driver", o.Name, "endpoint", o.Endpoint, "cluster", o.ClusterName, "ec2Endpoint", o.EC2Endpoint)
	err = g.Wait()
	log.Info("aws driver stopped")
	return err
}

// Validate checks every flag at once, one line per problem, as a
// cli.UsageError. An empty Endpoint is taken from the environment first.
func (o *Options) Validate() error {
	var c cli.Checks
	o.PluginFlags.Check(&c)
	if err := cli.CheckListenAddress(o.HealthAddress, false); err != nil {
		c.Bad("health-address", "%v", err)
	}
	if o.ClusterName == "" {
		c.Bad("cluster-name", "required: it names the cluster's tag on every instance (%s)", aws.ClusterTag("NAME"))
	} else if err := aws.CheckClusterName(o.ClusterName); err != nil {
		c.Bad("cluster-name", "%v", err)
	}
	if o.Region == "" {
		c.Bad("region", "must not be empty")
	}
	if o.RetryMaxAttempts < 1 {
		c.Bad("retry-max-attempts", "must be at least 1, got %d", o.RetryMaxAttempts)
	}
	if o.RetryMaxBackoff <= 0 {
		c.Bad("retry-max-backoff", "must be a positive duration, got %s", o.RetryMaxBackoff)
	}
	return c.Err()
}
