package awsserver

import (
	"context"
	"io"
	"log/slog"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/millwright-dev/millwright/internal/cli"
	"github.com/millwright-dev/millwright/internal/provider/aws"
)

// AddFlags defines every flag on fs, bound to o; o's values are the defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.PluginFlags.AddFlags(fs)
	fs.StringVar(&o.ClusterName, "cluster-name", o.ClusterName, "the cluster's name, in every instance's tag "+aws.ClusterTag("NAME")+"=owned (required; the IAM policy's conditions name it)")
	fs.StringVar(&o.HealthAddress, "health-address", o.HealthAddress, "address of /healthz and /readyz (ready while EC2 answers); empty: off")
	fs.StringVar(&o.EC2Endpoint, "ec2-endpoint", o.EC2Endpoint, "EC2 endpoint URL instead of AWS's regional one (an EC2-compatible cloud, moto in tests)")
	fs.StringVar(&o.STSEndpoint, "sts-endpoint", o.STSEndpoint, "STS endpoint URL for a Secret's roleARN instead of AWS's")
	fs.StringVar(&o.Region, "region", o.Region, "the region /readyz asks EC2 in, and the region of --interruption-queue-url (where the SQS calls go)")
	fs.StringVar(&o.InterruptionQueueURL, "interruption-queue-url", o.InterruptionQueueURL, "URL of the SQS queue EventBridge rules send EC2's spot interruption, rebalance, scheduled change and state-change events to, this cluster's alone; read with the default chain's credentials in --region; empty: no interruption events")
	fs.StringVar(&o.SQSEndpoint, "sqs-endpoint", o.SQSEndpoint, "SQS endpoint URL instead of AWS's regional one (moto in tests)")
	fs.IntVar(&o.RetryMaxAttempts, "retry-max-attempts", o.RetryMaxAttempts, "tries of an EC2 call that is throttled or fails (5xx, network) before the driver answers Unavailable")
	fs.DurationVar(&o.RetryMaxBackoff, "retry-max-backoff", o.RetryMaxBackoff, "longest wait between two tries of an EC2 call")
}

// NewCommand returns the millwright-aws command; logs go to logOut.
// Execute it with ExecuteContext: the context's end is the graceful
// shutdown. Errors are returned, not printed; a bad command line is a
// cli.UsageError.
func NewCommand(logOut io.Writer) *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:   "millwright-aws",
		Short: "Run Machines as EC2 instances: the AWS driver plugin",
		Long: `millwright-aws serves the "` + aws.DefaultName + `" driver over gRPC at --endpoint: it runs
each Machine as an EC2 instance, tagged with the cluster, the class and the
Machine, with the credentials of the class's Secret or the AWS SDK's default
chain. See docs/providers/aws.md for the providerSpec and the IAM policy.`,
		Example: `  millwright-aws --endpoint unix:///run/millwright/aws.sock --cluster-name prod-eu`,
	}
	o.AddFlags(cmd.Flags())
	cmd.CompletionOptions.DisableDefaultCmd = true
	return cli.PluginCommand(cmd, logOut, &o.PluginFlags, o.Validate, func(ctx context.Context, log *slog.Logger) error {
		return Run(ctx, o, log)
	})
}
