package aws

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	corev1 "k8s.io/api/core/v1"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// The keys of a class's credentials Secret (docs/providers/aws.md,
// "Credentials"): Millwright's, and MCM's AWS provider's for the access
// key, so a Secret made for MCM works unchanged.
const (
	KeyAccessKeyID        = "accessKeyID"
	KeySecretAccessKey    = "secretAccessKey"
	KeySessionToken       = "sessionToken"
	KeyRoleARN            = "roleARN"
	KeyMCMAccessKeyID     = "providerAccessKeyId"
	KeyMCMSecretAccessKey = "providerSecretAccessKey"
)

// creds are the credentials a class's Secret names; empty access key: the
// SDK's default chain.
type creds struct {
	accessKeyID, secretAccessKey, sessionToken, roleARN string
}

// credsOf reads the credentials of a Secret; a half-given key pair is
// InvalidArgument naming the key that is missing.
func credsOf(s *corev1.Secret) (creds, error) {
	if s == nil {
		return creds{}, nil
	}
	get := func(keys ...string) string {
		for _, k := range keys {
			if v := s.Data[k]; len(v) > 0 {
				return string(v)
			}
		}
		return ""
	}
	c := creds{
		accessKeyID:     get(KeyAccessKeyID, KeyMCMAccessKeyID),
		secretAccessKey: get(KeySecretAccessKey, KeyMCMSecretAccessKey),
		sessionToken:    get(KeySessionToken),
		roleARN:         get(KeyRoleARN),
	}
	switch {
	case c.accessKeyID != "" && c.secretAccessKey == "":
		return creds{}, invalid("secret."+KeySecretAccessKey, "missing: the Secret has %s but no %s (or %s)", KeyAccessKeyID, KeySecretAccessKey, KeyMCMSecretAccessKey)
	case c.accessKeyID == "" && c.secretAccessKey != "":
		return creds{}, invalid("secret."+KeyAccessKeyID, "missing: the Secret has %s but no %s (or %s)", KeySecretAccessKey, KeyAccessKeyID, KeyMCMAccessKeyID)
	case c.accessKeyID == "" && c.sessionToken != "":
		return creds{}, invalid("secret."+KeySessionToken, "needs %s and %s", KeyAccessKeyID, KeySecretAccessKey)
	}
	return c, nil
}

// key identifies a client: the same region and credentials share one, and
// with it the SDK's credentials cache and retry quota.
func (c creds) key(region string) string {
	h := sha256.New()
	for _, s := range []string{region, c.accessKeyID, c.secretAccessKey, c.sessionToken, c.roleARN} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// clients caches an EC2 client per region and credentials.
type clients struct {
	mu sync.Mutex
	m  map[string]*ec2.Client
}

// client returns the EC2 client of a region and Secret.
func (d *Driver) client(ctx context.Context, region string, secret *corev1.Secret) (*ec2.Client, error) {
	c, err := credsOf(secret)
	if err != nil {
		return nil, err
	}
	key := c.key(region)
	d.clients.mu.Lock()
	defer d.clients.mu.Unlock()
	if cl := d.clients.m[key]; cl != nil {
		return cl, nil
	}
	cfg, err := d.awsConfig(ctx, region, c)
	if err != nil {
		return nil, err
	}
	cl := ec2.NewFromConfig(cfg, func(o *ec2.Options) {
		if d.opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(d.opts.Endpoint)
		}
	})
	if d.clients.m == nil {
		d.clients.m = map[string]*ec2.Client{}
	}
	d.clients.m[key] = cl
	return cl, nil
}

// awsConfig is the SDK configuration of a region and credentials: the
// Secret's keys, else the default chain (environment, shared files, web
// identity, the instance's or the pod's role); then roleARN assumed
// through STS with them.
func (d *Driver) awsConfig(ctx context.Context, region string, c creds) (aws.Config, error) {
	var cfg aws.Config
	if c.accessKeyID != "" {
		cfg = aws.Config{Region: region,
			Credentials: aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(c.accessKeyID, c.secretAccessKey, c.sessionToken))}
	} else {
		var err error
		if cfg, err = config.LoadDefaultConfig(ctx, config.WithRegion(region)); err != nil {
			return aws.Config{}, driver.Errorf(driver.Unauthenticated, "loading the AWS default credential chain: %v", err)
		}
	}
	cfg.Retryer = d.retryer
	if c.roleARN != "" {
		stsClient := sts.NewFromConfig(cfg, func(o *sts.Options) {
			if d.opts.STSEndpoint != "" {
				o.BaseEndpoint = aws.String(d.opts.STSEndpoint)
			}
		})
		cfg.Credentials = aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(stsClient, c.roleARN, func(o *stscreds.AssumeRoleOptions) {
			o.RoleSessionName = sessionName(d.opts.ClusterName)
		}))
	}
	cfg.Credentials = typedCredentials{cfg.Credentials}
	return cfg, nil
}

// credentialsError is a failure to get credentials, which the SDK only
// reports as text: typed, classify can tell it (Unauthenticated) from
// EC2's answers.
type credentialsError struct{ err error }

func (e *credentialsError) Error() string { return e.err.Error() }
func (e *credentialsError) Unwrap() error { return e.err }

// typedCredentials returns a provider's failures as credentialsError.
type typedCredentials struct{ p aws.CredentialsProvider }

func (t typedCredentials) Retrieve(ctx context.Context) (aws.Credentials, error) {
	c, err := t.p.Retrieve(ctx)
	if err != nil {
		return c, &credentialsError{err}
	}
	return c, nil
}

// sessionName names the driver's STS sessions, which CloudTrail shows:
// millwright-CLUSTER, within STS's 64 characters (a cluster name has only
// characters STS takes).
func sessionName(cluster string) string {
	n := "millwright-" + cluster
	if len(n) > 64 {
		n = n[:64]
	}
	return n
}

// retryer is the SDK's standard retryer with the driver's attempts and
// backoff: throttling and 5xx are retried within a call before the call
// answers Unavailable.
func (d *Driver) retryer() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = d.opts.RetryMaxAttempts
		o.MaxBackoff = d.opts.RetryMaxBackoff
		o.Backoff = retry.NewExponentialJitterBackoff(d.opts.RetryMaxBackoff)
	})
}
