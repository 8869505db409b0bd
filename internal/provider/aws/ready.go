package aws

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// probeKey signs the reachability probe of a driver without default
// credentials: EC2 answers it AuthFailure, which proves it answers.
const probeKey = "MILLWRIGHTREADINESS"

// Ready reports whether EC2 in region answers the driver: one
// DescribeAvailabilityZones, not retried. With the default chain's
// credentials, they must be accepted; without any (every class has its
// own Secret), EC2 only has to answer. The error says which failed:
// Unavailable (unreachable), PermissionDenied or Unauthenticated
// (credentials refused).
func (d *Driver) Ready(ctx context.Context, region string) error {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(region), config.WithRetryMaxAttempts(1))
	if err != nil {
		return driver.Errorf(driver.Unauthenticated, "loading the AWS default credential chain: %v", err)
	}
	anonymous := false
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		anonymous = true
		cfg.Credentials = credentials.NewStaticCredentialsProvider(probeKey, probeKey, "")
	}
	c := ec2.NewFromConfig(cfg, func(o *ec2.Options) {
		if d.opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(d.opts.Endpoint)
		}
	})
	_, err = c.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{})
	if err == nil {
		return nil
	}
	if anonymous && apiCode(err) != "" {
		return nil // EC2 answered; the classes bring their credentials
	}
	return ec2Error(ctx, err, "EC2 in %s (endpoint %s)", region, d.endpointName())
}

func (d *Driver) endpointName() string {
	if d.opts.Endpoint != "" {
		return d.opts.Endpoint
	}
	return "the region's"
}
