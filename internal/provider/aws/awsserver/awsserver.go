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
	"net/url"
	"regexp"
	"strings"
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
	// Region is the region /readyz asks, and the interruption queue's.
	Region string
	// InterruptionQueueURL is the SQS queue of EventBridge's interruption
	// events; empty: the driver does not implement ReceiveEvents.
	InterruptionQueueURL string
	// SQSEndpoint replaces SQS's regional endpoint; empty: AWS's.
	SQSEndpoint string
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
		Logger: log, RetryMaxAttempts: o.RetryMaxAttempts, RetryMaxBackoff: o.RetryMaxBackoff,
		InterruptionQueueURL: o.InterruptionQueueURL, QueueRegion: o.Region, SQSEndpoint: o.SQSEndpoint})
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
	log.Info("aws driver running", "driver", o.Name, "endpoint", o.Endpoint, "cluster", o.ClusterName, "ec2Endpoint", o.EC2Endpoint,
		"interruptionQueue", o.InterruptionQueueURL)
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
	if o.InterruptionQueueURL != "" {
		if err := checkQueueURL(o.InterruptionQueueURL, o.Region); err != nil {
			c.Bad("interruption-queue-url", "%v", err)
		}
	}
	if o.SQSEndpoint != "" {
		if u, err := url.Parse(o.SQSEndpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			c.Bad("sqs-endpoint", "%q: want an http:// or https:// URL", o.SQSEndpoint)
		}
	}
	if o.RetryMaxAttempts < 1 {
		c.Bad("retry-max-attempts", "must be at least 1, got %d", o.RetryMaxAttempts)
	}
	if o.RetryMaxBackoff <= 0 {
		c.Bad("retry-max-backoff", "must be a positive duration, got %s", o.RetryMaxBackoff)
	}
	return c.Err()
}

// awsQueueHostRE matches the host of an SQS queue URL of AWS itself
// (sqs.REGION.amazonaws.com, or the legacy REGION.queue.amazonaws.com),
// whose region the driver can check against --region.
var awsQueueHostRE = regexp.MustCompile(`^(?:sqs\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?|([a-z0-9-]+)\.queue\.amazonaws\.com(?:\.cn)?)$`)

// checkQueueURL checks an interruption queue URL: an http(s) URL naming a
// queue (ACCOUNT/NAME), and for one of AWS's, in --region: the driver
// signs its SQS calls for --region, and a queue elsewhere would refuse
// every one of them.
func checkQueueURL(raw, region string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") == "" {
		return fmt.Errorf("%q: want the queue's URL, such as https://sqs.%s.amazonaws.com/123456789012/NAME", raw, region)
	}
	if m := awsQueueHostRE.FindStringSubmatch(u.Hostname()); m != nil {
		if r := m[1] + m[2]; r != region {
			return fmt.Errorf("%q is a queue of region %s, not of --region %s (the region the driver calls SQS in)", raw, r, region)
		}
	}
	return nil
}
