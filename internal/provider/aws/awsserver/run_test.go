package awsserver

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/motoserver"
	"github.com/millwright-dev/millwright/internal/testenv"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// noDefaultCredentials keeps the SDK's default chain from finding this
// machine's credentials or waiting for an instance metadata service.
func noDefaultCredentials(t *testing.T) {
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

// serve runs millwright-aws's Run against ec2Endpoint and returns a client
// of its driver and its health address.
func serve(t *testing.T, ec2Endpoint string, mod ...func(*Options)) (*driver.Client, string) {
	t.Helper()
	o := NewOptions()
	o.Endpoint = "unix://" + filepath.Join(t.TempDir(), "aws.sock")
	o.HealthAddress = testenv.FreeAddr(t)
	o.ClusterName = "awsserver-test"
	o.EC2Endpoint = ec2Endpoint
	o.RetryMaxBackoff = 20 * time.Millisecond
	for _, f := range mod {
		f(o)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	// Run listens in its goroutine: the health server answers once it has.
	testenv.Eventually(t, 30*time.Second, "/healthz to answer", func() (bool, error) {
		code, _, err := testenv.HTTPGet("http://" + o.HealthAddress + "/healthz")
		return code == 200, err
	})
	c, err := driver.Dial(o.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, o.HealthAddress
}

func createReq(name string) *driver.CreateMachineRequest {
	return &driver.CreateMachineRequest{
		Machine: &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: k8stypes.UID("uid-awsserver-" + name)}},
		MachineClass: &v1alpha1.MachineClass{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"},
			Spec: v1alpha1.MachineClassSpec{ProviderSpec: runtime.RawExtension{Raw: []byte(`{"region":"us-east-1","ami":"ami-12c6146b","instanceType":"t3.micro"}`)}}},
		Secret: &corev1.Secret{Data: map[string][]byte{"accessKeyID": []byte("AKIDTEST"), "secretAccessKey": []byte("x")}},
	}
}

// instanceCount is how many instances moto has, in any state.
func instanceCount(t *testing.T, url string) int {
	t.Helper()
	c := ec2.NewFromConfig(awssdk.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "x", "")},
		func(o *ec2.Options) { o.BaseEndpoint = awssdk.String(url) })
	out, err := c.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range out.Reservations {
		n += len(r.Instances)
	}
	return n
}

// TestUnreachableEC2IsWaitedFor checks that a driver whose EC2 endpoint
// does not answer keeps running: /readyz says EC2 is unreachable, calls
// answer Unavailable with a message that says so, and nothing is created
// (moto, reachable only by the test, has no instance afterwards).
func TestUnreachableEC2IsWaitedFor(t *testing.T) {
	noDefaultCredentials(t)
	moto := motoserver.Start(t)
	// Port 1 of the loopback: nothing listens there. A port FreeAddr
	// found free can be taken again before the driver dials it (by the
	// health server's own FreeAddr, or another package's test), and then
	// EC2 "answered" (CI saw /readyz 200 "ok").
	dead := "http://127.0.0.1:1"
	c, health := serve(t, dead)
	code, body, err := testenv.HTTPGet("http://" + health + "/readyz")
	if err != nil || code != 503 || !strings.Contains(body, "Unavailable") || !strings.Contains(body, "unreachable") {
		t.Fatalf("/readyz with EC2 unreachable: %d %q %v; want 503 saying Unavailable, unreachable", code, body, err)
	}
	if code, _, _ := testenv.HTTPGet("http://" + health + "/healthz"); code != 200 {
		t.Errorf("/healthz: %d; the process is alive", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = c.CreateMachine(ctx, createReq("unreachable"))
	if driver.CodeOf(err) != driver.Unavailable || !strings.Contains(driver.MessageOf(err), "EC2 unreachable") {
		t.Fatalf("CreateMachine with EC2 unreachable: %v; want Unavailable saying EC2 unreachable", err)
	}
	if n := instanceCount(t, moto.URL); n != 0 {
		t.Fatalf("moto has %d instances", n)
	}
}

// TestReadyWithEC2 checks /readyz answers 200 once EC2 answers, with no
// default credentials (every class brings its own).
func TestReadyWithEC2(t *testing.T) {
	noDefaultCredentials(t)
	moto := motoserver.Start(t)
	c, health := serve(t, moto.URL)
	code, body, err := testenv.HTTPGet("http://" + health + "/readyz")
	if err != nil || code != 200 {
		t.Fatalf("/readyz: %d %q %v; want 200", code, body, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.CreateMachine(ctx, createReq("ready")); err != nil {
		t.Fatalf("CreateMachine: %v", err)
	}
	if n := instanceCount(t, moto.URL); n != 1 {
		t.Fatalf("moto has %d instances, want 1", n)
	}
}

// TestReadyzSaysCredentialsAreRefused checks that default credentials EC2
// refuses make /readyz fail with EC2's reason.
func TestReadyzSaysCredentialsAreRefused(t *testing.T) {
	noDefaultCredentials(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDREFUSED")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	moto := motoserver.Start(t)
	p := motoserver.NewProxy(t, moto.URL)
	p.Fail(&motoserver.Fault{Action: "DescribeAvailabilityZones", Code: "AuthFailure", Status: 401})
	_, health := serve(t, p.URL)
	code, body, err := testenv.HTTPGet("http://" + health + "/readyz")
	if err != nil || code != 503 || !strings.Contains(body, "PermissionDenied") || !strings.Contains(body, "AuthFailure") {
		t.Fatalf("/readyz with refused credentials: %d %q %v; want 503 saying PermissionDenied, AuthFailure", code, body, err)
	}
}

// TestValidateNeedsClusterName checks the required flag.
func TestValidateNeedsClusterName(t *testing.T) {
	o := NewOptions()
	o.Endpoint = "unix:///tmp/x.sock"
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--cluster-name: required") {
		t.Fatalf("Validate without --cluster-name: %v", err)
	}
	o.ClusterName = "bad name"
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--cluster-name") {
		t.Fatalf("Validate with a bad --cluster-name: %v", err)
	}
}

// TestValidateQueueURL checks --interruption-queue-url and --sqs-endpoint:
// a queue of AWS's in another region than --region is refused (the driver
// signs its SQS calls for --region).
func TestValidateQueueURL(t *testing.T) {
	for _, c := range []struct {
		url, endpoint, wantErr string
	}{
		{"https://sqs.eu-west-1.amazonaws.com/123456789012/prod-eu", "", ""},
		{"https://eu-west-1.queue.amazonaws.com/123456789012/prod-eu", "", ""},
		{"http://127.0.0.1:5000/123456789012/q", "http://127.0.0.1:5000", ""},
		{"https://sqs.us-east-1.amazonaws.com/123456789012/prod-eu", "", "--interruption-queue-url: \"https://sqs.us-east-1.amazonaws.com/123456789012/prod-eu\" is a queue of region us-east-1, not of --region eu-west-1"},
		{"prod-eu", "", "--interruption-queue-url"},
		{"https://sqs.eu-west-1.amazonaws.com/", "", "--interruption-queue-url"},
		{"https://sqs.eu-west-1.amazonaws.com/123456789012/q", "localhost:5000", "--sqs-endpoint"},
	} {
		o := NewOptions()
		o.Endpoint, o.ClusterName, o.Region = "unix:///tmp/x.sock", "prod-eu", "eu-west-1"
		o.InterruptionQueueURL, o.SQSEndpoint = c.url, c.endpoint
		err := o.Validate()
		if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("Validate with queue %q, endpoint %q: %v; want %q", c.url, c.endpoint, err, c.wantErr)
		}
	}
}

// TestServesTheInterruptionQueue checks that --interruption-queue-url and
// --sqs-endpoint reach the driver: over gRPC, GetPluginInfo lists
// ReceiveEvents and a call reads the queue (made in moto, in --region)
// and answers its message about an instance of another cluster with no
// event.
func TestServesTheInterruptionQueue(t *testing.T) {
	noDefaultCredentials(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "x")
	moto := motoserver.Start(t)
	sq := sqs.NewFromConfig(awssdk.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "x", "")},
		func(o *sqs.Options) { o.BaseEndpoint = awssdk.String(moto.URL) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: awssdk.String("interruptions")})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"detail-type":"EC2 Instance Rebalance Recommendation","source":"aws.ec2","time":"2026-12-03T10:00:00Z","region":"us-east-1","detail":{"instance-id":"i-0123456789abcdef0"}}`
	if _, err := sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: awssdk.String(body)}); err != nil {
		t.Fatal(err)
	}
	c, _ := serve(t, moto.URL, func(o *Options) { o.InterruptionQueueURL, o.SQSEndpoint = awssdk.ToString(q.QueueUrl), moto.URL })
	info, err := c.GetPluginInfo(ctx, &driver.GetPluginInfoRequest{})
	if err != nil || !slices.Contains(info.Implements, driver.MethodReceiveEvents) {
		t.Fatalf("GetPluginInfo: %+v, %v; want ReceiveEvents listed", info, err)
	}
	resp, err := c.ReceiveEvents(ctx, &driver.ReceiveEventsRequest{Wait: time.Second})
	if err != nil || len(resp.Events) != 0 {
		t.Fatalf("ReceiveEvents: %+v, %v; want no event (the instance is not the cluster's)", resp, err)
	}
	attrs, err := sq.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil || attrs.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)] != "0" {
		t.Fatalf("the queue after the call: %v, %v; want its message received and deleted", attrs.Attributes, err)
	}
}
