package aws

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/pkg/driver"
)

const (
	testRegion = "us-east-1"
	// testAMI is one of the AMIs moto ships.
	testAMI   = "ami-12c6146b"
	validSpec = `{"region":"us-east-1","ami":"ami-12c6146b","instanceType":"t3.micro"}`
)

// clusterOf is a cluster name of the test's own, so tests sharing moto do
// not see each other's instances.
func clusterOf(t testing.TB) string {
	h := sha256.Sum256([]byte(t.Name()))
	return "test-" + hex.EncodeToString(h[:6])
}

// newDriver returns a driver of the test's cluster on endpoint (moto's
// when empty), with retries short enough for a test.
func newDriver(t testing.TB, endpoint string, mod ...func(*Options)) *Driver {
	t.Helper()
	if endpoint == "" {
		endpoint = moto.URL
	}
	o := Options{ClusterName: clusterOf(t), Endpoint: endpoint, STSEndpoint: endpoint,
		RetryMaxAttempts: 3, RetryMaxBackoff: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, f := range mod {
		f(&o)
	}
	d, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func class(name, spec string) *v1alpha1.MachineClass {
	return &v1alpha1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       v1alpha1.MachineClassSpec{Provider: DefaultName, ProviderSpec: runtime.RawExtension{Raw: []byte(spec)}},
	}
}

// testSecret has credentials moto accepts (any) and user data.
func testSecret() *corev1.Secret {
	return &corev1.Secret{Data: map[string][]byte{
		KeyAccessKeyID: []byte("AKIDMILLWRIGHTTEST"), KeySecretAccessKey: []byte("secret"),
		"userData": []byte("#!/bin/sh\necho hello\n"),
	}}
}

func machine(name string) *v1alpha1.Machine {
	return &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: k8stypes.UID("uid-" + name)}}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// rawEC2 is an EC2 client of moto that is not the driver's, to look at
// and change what the driver made.
func rawEC2() *ec2.Client {
	return ec2.NewFromConfig(awssdk.Config{Region: testRegion,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDMILLWRIGHTTEST", "secret", "")},
		func(o *ec2.Options) { o.BaseEndpoint = awssdk.String(moto.URL) })
}

// allInstances lists every instance moto has in the test region, in any
// state, tagged or not.
func allInstances(t testing.TB, filters ...types.Filter) []types.Instance {
	t.Helper()
	out, err := rawEC2().DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{Filters: filters})
	if err != nil {
		t.Fatal(err)
	}
	var insts []types.Instance
	for _, r := range out.Reservations {
		insts = append(insts, r.Instances...)
	}
	return insts
}

// clusterInstances are the test cluster's instances in the given states
// (all states when none).
func clusterInstances(t testing.TB, states ...string) []types.Instance {
	t.Helper()
	f := []types.Filter{tagFilter(ClusterTag(clusterOf(t)), clusterTagValue)}
	if len(states) > 0 {
		f = append(f, filter("instance-state-name", states...))
	}
	return allInstances(t, f...)
}

func create(t testing.TB, d *Driver, c *v1alpha1.MachineClass, m *v1alpha1.Machine) *driver.CreateMachineResponse {
	t.Helper()
	resp, err := d.CreateMachine(ctxT(t), &driver.CreateMachineRequest{Machine: m, MachineClass: c, Secret: testSecret()})
	if err != nil {
		t.Fatalf("CreateMachine(%s): %v", m.Name, err)
	}
	return resp
}

func instanceOf(t testing.TB, providerID string) types.Instance {
	t.Helper()
	id, err := ParseProviderID(providerID)
	if err != nil {
		t.Fatal(err)
	}
	insts := allInstances(t, filter("instance-id", id))
	if len(insts) != 1 {
		t.Fatalf("moto has %d instances %s", len(insts), id)
	}
	return insts[0]
}
