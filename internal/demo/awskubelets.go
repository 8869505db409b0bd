package demo

import (
	"context"
	"fmt"
	"sync"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/kwok"
	"github.com/millwright-dev/millwright/internal/provider/aws"
)

// NewEC2Client is an EC2 client of region at endpoint (moto's) with
// dummy keys: moto accepts any.
func NewEC2Client(endpoint, region string) *ec2.Client {
	return ec2.New(ec2.Options{
		Region:       region,
		BaseEndpoint: awssdk.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDMILLWRIGHTDEMO", "demo", ""),
	})
}

// AWSKubelets plays the kubelets of a cluster's EC2 instances on moto,
// whose instances run nothing: once an instance of the cluster (its
// cluster tag) is running, it registers the instance's Node, named by its
// millwright.dev/node-name tag with providerID aws:///<zone>/<id>, for kwok
// to keep Ready; once the instance is shutting down or gone, the Node goes
// NotReady (kwok's not-ready Stage), as a dead kubelet's would. Each
// instance registers once: a Node the manager deleted stays deleted.
type AWSKubelets struct {
	EC2     *ec2.Client
	Cluster string
	Nodes   client.Client

	mu sync.Mutex
	// registered are the instances whose Node was made, by ID; true once
	// their Node was made NotReady.
	registered map[string]bool
}

// Run syncs every interval until ctx ends; errors are passed to logf
// (the next sync tries again).
func (k *AWSKubelets) Run(ctx context.Context, interval time.Duration, logf func(string, ...any)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := k.Sync(ctx); err != nil && ctx.Err() == nil {
			logf("playing the instances' kubelets: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sync registers the Nodes of the running instances and makes those of
// the dead ones NotReady, once each.
func (k *AWSKubelets) Sync(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.registered == nil {
		k.registered = map[string]bool{}
	}
	p := ec2.NewDescribeInstancesPaginator(k.EC2, &ec2.DescribeInstancesInput{
		Filters: []types.Filter{{Name: awssdk.String("tag:" + aws.ClusterTag(k.Cluster)), Values: []string{"owned"}}},
	})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, r := range out.Reservations {
			for i := range r.Instances {
				if err := k.sync(ctx, &r.Instances[i]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (k *AWSKubelets) sync(ctx context.Context, in *types.Instance) error {
	id := awssdk.ToString(in.InstanceId)
	dead, known := k.registered[id]
	tags := map[string]string{}
	for _, t := range in.Tags {
		tags[awssdk.ToString(t.Key)] = awssdk.ToString(t.Value)
	}
	name := tags[aws.TagNodeName]
	if name == "" || in.State == nil {
		return nil
	}
	switch in.State.Name {
	case types.InstanceStateNameRunning:
		if known {
			return nil
		}
		if err := k.Nodes.Create(ctx, awsNode(in, name)); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("registering Node %s of %s: %w", name, id, err)
		}
		k.registered[id] = false
	case types.InstanceStateNameShuttingDown, types.InstanceStateNameTerminated, types.InstanceStateNameStopping, types.InstanceStateNameStopped:
		if !known || dead {
			return nil
		}
		n := &corev1.Node{}
		err := k.Nodes.Get(ctx, client.ObjectKey{Name: name}, n)
		if apierrors.IsNotFound(err) {
			k.registered[id] = true
			return nil
		}
		if err != nil {
			return err
		}
		if n.Spec.ProviderID != providerID(in) { // another instance's Node of that name
			k.registered[id] = true
			return nil
		}
		patch := client.MergeFrom(n.DeepCopy())
		n.Labels[kwok.NotReadyLabel] = "true"
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[kwok.NotReadyReasonAnnotation] = "InstanceGone"
		n.Annotations[kwok.NotReadyMessageAnnotation] = "instance " + id + " is " + string(in.State.Name)
		if err := k.Nodes.Patch(ctx, n, patch); client.IgnoreNotFound(err) != nil {
			return err
		}
		k.registered[id] = true
	}
	return nil
}

func providerID(in *types.Instance) string {
	zone := ""
	if in.Placement != nil {
		zone = awssdk.ToString(in.Placement.AvailabilityZone)
	}
	return "aws:///" + zone + "/" + awssdk.ToString(in.InstanceId)
}

// awsNode is the Node a kubelet on the instance registers, with the
// labels the AWS cloud provider sets, for kwok to manage.
func awsNode(in *types.Instance, name string) *corev1.Node {
	zone := ""
	if in.Placement != nil {
		zone = awssdk.ToString(in.Placement.AvailabilityZone)
	}
	region := zone
	if len(zone) > 1 {
		region = zone[:len(zone)-1]
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"),
		corev1.ResourcePods: resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				"type":                         "kwok",
				corev1.LabelHostname:           name,
				corev1.LabelOSStable:           "linux",
				corev1.LabelArchStable:         "amd64",
				corev1.LabelTopologyZone:       zone,
				corev1.LabelTopologyRegion:     region,
				corev1.LabelInstanceTypeStable: string(in.InstanceType),
			},
			Annotations: map[string]string{kwok.NodeAnnotation: kwok.NodeAnnotationValue},
		},
		Spec: corev1.NodeSpec{
			ProviderID: providerID(in),
			Taints:     []corev1.Taint{{Key: v1alpha1.UninitializedTaintKey, Effect: corev1.TaintEffectNoSchedule}},
		},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: awssdk.ToString(in.PrivateIpAddress)},
				{Type: corev1.NodeHostName, Address: name},
			},
			NodeInfo: corev1.NodeSystemInfo{SystemUUID: awssdk.ToString(in.InstanceId), OperatingSystem: "linux", Architecture: "amd64"},
		},
	}
}
