package demo

import (
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/internal/localcluster"
	"github.com/millwright-dev/millwright/internal/motoserver"
)

// ProviderAWS is the demo on moto's EC2 API (Options.Provider).
const ProviderAWS = "aws"

const (
	// awsRegion is the region of the demo's class, awsCluster the
	// cluster name (its instances' cluster tag).
	awsRegion  = "us-east-1"
	awsCluster = "demo"
)

// awsZones are the zones of config/demo/aws's class, whose default
// subnets fill its <<SUBNET_*>>.
var awsZones = map[string]string{"SUBNET_A": "us-east-1a", "SUBNET_B": "us-east-1b", "SUBNET_C": "us-east-1c"}

// awsProvider: millwright-aws against a local moto_server (a real EC2 API,
// simulated instances), with the instances' kubelets played here and
// their Nodes kept Ready by kwok.
type awsProvider struct {
	root, bin string
	motoURL   string
	subnets   map[string]string // <<SUBNET_*>> → subnet ID
}

func (p *awsProvider) name() string                { return ProviderAWS }
func (p *awsProvider) apiServerExtraIPs() []net.IP { return nil }

func (p *awsProvider) start(ctx context.Context, cluster *localcluster.Cluster, socket string, say func(string, ...any)) (func(), error) {
	if _, err := exec.LookPath(motoserver.Program); err != nil {
		return nil, fmt.Errorf("the AWS demo runs moto's EC2 API, and %s is not on PATH: %s", motoserver.Program, motoserver.InstallHint)
	}
	say("Starting moto_server (a local EC2 API whose instances run nothing)...")
	moto, stopMoto, err := motoserver.StartMain(filepath.Join(cluster.Dir(), "logs"))
	if err != nil {
		return nil, err
	}
	p.motoURL = moto.URL
	ec2c := NewEC2Client(moto.URL, awsRegion)
	if err := p.discoverSubnets(ctx, ec2c); err != nil {
		stopMoto()
		return nil, err
	}
	health, err := freeAddr()
	if err != nil {
		stopMoto()
		return nil, err
	}
	say("Starting millwright-aws (the AWS driver, EC2 at %s, cluster %s)...", moto.URL, awsCluster)
	if err := cluster.StartProcess(ctx, "millwright-aws", filepath.Join(p.bin, "millwright-aws"),
		"--endpoint", socket, "--health-address", health, "--cluster-name", awsCluster,
		"--ec2-endpoint", moto.URL, "--region", awsRegion); err != nil {
		stopMoto()
		return nil, err
	}
	if err := waitReady(ctx, "http://"+health+"/readyz"); err != nil {
		stopMoto()
		return nil, fmt.Errorf("millwright-aws did not become ready (log: %s): %w", cluster.LogPath("millwright-aws"), err)
	}
	c, err := newClient(cluster)
	if err != nil {
		stopMoto()
		return nil, err
	}
	// moto's instances run no kubelet: once an instance runs, its Node is
	// registered here, as its kubelet would, and kwok keeps it Ready.
	kctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		(&AWSKubelets{EC2: ec2c, Cluster: awsCluster, Nodes: c}).Run(kctx, time.Second, func(string, ...any) {})
	}()
	return func() { cancel(); <-done; stopMoto() }, nil
}

// discoverSubnets finds the default VPC's subnet of each of the class's zones.
func (p *awsProvider) discoverSubnets(ctx context.Context, c *ec2.Client) error {
	out, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []types.Filter{
		{Name: awssdk.String("default-for-az"), Values: []string{"true"}}}})
	if err != nil {
		return fmt.Errorf("listing moto's default subnets: %w", err)
	}
	byZone := map[string]string{}
	for _, s := range out.Subnets {
		byZone[awssdk.ToString(s.AvailabilityZone)] = awssdk.ToString(s.SubnetId)
	}
	p.subnets = map[string]string{}
	for v, zone := range awsZones {
		if byZone[zone] == "" {
			return fmt.Errorf("moto has no default subnet in %s", zone)
		}
		p.subnets[v] = byZone[zone]
	}
	return nil
}

func (p *awsProvider) managerArgs(*localcluster.Cluster) []string { return nil }
func (p *awsProvider) manifests() string                          { return filepath.Join(p.root, "config", "demo", "aws") }
func (p *awsProvider) sample() string {
	return fmt.Sprintf("MachineClass demo-small (EC2 instances on moto), Secret aws-credentials, MachineDeployment demo (%d replicas)", replicas)
}
func (p *awsProvider) vars() map[string]string { return p.subnets }
func (p *awsProvider) hasWorkload() bool       { return false }

// removeFleet: nothing outlives the demo, moto's instances stop with it.
func (p *awsProvider) removeFleet(context.Context, client.Client, func(string, ...any)) {}

func (p *awsProvider) printNextSteps(out io.Writer, cluster *localcluster.Cluster) {
	kubectl := filepath.Join(p.bin, "kubectl")
	fmt.Fprintf(out, `
Each Machine is an EC2 instance in moto (%[3]s): a real EC2 API, through the
AWS SDK, whose instances run nothing. Their kubelets are played by the demo
(a Node registered with the instance's providerID once it runs) and kwok.
Try this, in another terminal:

  export KUBECONFIG=%[1]s
  alias kubectl=%[2]s

  kubectl get millwright                      # Machines with their aws:///<zone>/<instance-id>
  kubectl get nodes -L topology.kubernetes.io/zone

  # The instances, as EC2 lists them:
  curl -s %[3]s -H '%[4]s' -d Version=2016-11-15 -d Action=DescribeInstances | grep -E 'instanceId|<name>'

  # Terminate an instance behind Millwright's back; its Node goes NotReady,
  # the Machine Unknown, then Failed after its health timeout (1m), then it
  # is replaced:
  curl -s %[3]s -H '%[4]s' -d Version=2016-11-15 -d Action=TerminateInstances -d InstanceId.1=i-...

  # Scale the fleet (the Machines spread over us-east-1a, b and c):
  kubectl scale machinedeployment demo --replicas=5

Logs of every process are in %[5]s.
`, cluster.Kubeconfig(), kubectl, p.motoURL,
		"Authorization: AWS4-HMAC-SHA256 Credential=AKIDDEMO/20260101/us-east-1/ec2/aws4_request, SignedHeaders=host, Signature=0",
		filepath.Join(cluster.Dir(), "logs"))
}
