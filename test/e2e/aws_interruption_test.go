package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// interruptionQueue creates the scenario's SQS interruption queue in moto,
// as EventBridge's rules would feed it, and returns its URL.
func (w *awsWorld) interruptionQueue(t testing.TB, name string) string {
	t.Helper()
	w.sqs = sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: awssdk.String(w.moto.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDMILLWRIGHTE2E", "e2e", "")})
	out, err := w.sqs.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: awssdk.String(name + "-interruptions")})
	if err != nil {
		t.Fatalf("creating the interruption queue in moto: %v", err)
	}
	w.queueURL = awssdk.ToString(out.QueueUrl)
	return w.queueURL
}

// postSpotWarning posts EC2's spot interruption warning for an instance,
// in the JSON EventBridge delivers, and returns the warning's time.
func (w *awsWorld) postSpotWarning(t *testing.T, zone, id string) time.Time {
	t.Helper()
	at := time.Now().UTC().Truncate(time.Second)
	body := fmt.Sprintf(`{"version":"0","id":"1e5527d7-bb36-4607-3370-4164db56a40e","detail-type":"EC2 Spot Instance Interruption Warning",`+
		`"source":"aws.ec2","account":"123456789012","time":%q,"region":"us-east-1","resources":["arn:aws:ec2:%s:instance/%s"],`+
		`"detail":{"instance-id":%q,"instance-action":"terminate"}}`, at.Format(time.RFC3339), zone, id, id)
	if _, err := w.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: awssdk.String(w.queueURL), MessageBody: awssdk.String(body)}); err != nil {
		t.Fatalf("posting the spot interruption warning: %v", err)
	}
	return at
}

// spotInterruption posts a spot interruption warning for one Machine of
// a fleet and checks what docs/interruptions.md promises: the Machine is
// marked Interrupted with the warning's deadline and an Event, its
// replacement is created before its deletion starts, its Node is drained
// and its instance terminated before the two minutes run out, and the
// fleet is whole again. It logs the timeline, from a watch that sees
// every change of the Machines.
func (s *scenario) spotInterruption(fleet []v1alpha1.Machine, class string) {
	t := s.t.(*testing.T)
	w := s.aws
	victim := fleet[0]
	rest, _ := strings.CutPrefix(victim.Spec.ProviderID, "aws:///")
	zone, id, _ := strings.Cut(rest, "/")
	watcher, err := k8s.Watch(context.Background(), &v1alpha1.MachineList{}, client.InNamespace(s.ns))
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Stop()
	warned := w.postSpotWarning(t, zone, id)
	deadline := warned.Add(2 * time.Minute)

	var marked, replaced, deleting, drained, gone, terminated time.Time
	var replacement string
	bound := time.After(2 * time.Minute)
	for gone.IsZero() {
		select {
		case e := <-watcher.ResultChan():
			m, ok := e.Object.(*v1alpha1.Machine)
			if !ok {
				t.Fatalf("watching Machines: %v", e.Object)
			}
			now := time.Now()
			switch {
			case m.Name != victim.Name:
				if e.Type == watch.Added && replaced.IsZero() && !slices.ContainsFunc(fleet, func(f v1alpha1.Machine) bool { return f.Name == m.Name }) {
					replaced, replacement = now, m.Name
				}
			case e.Type == watch.Deleted:
				gone = now
			default:
				if c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.InterruptedCondition); c != nil && marked.IsZero() {
					marked = now
					if c.Status != metav1.ConditionTrue || m.Status.InterruptionDeadline == nil || !m.Status.InterruptionDeadline.Time.Equal(deadline) {
						t.Errorf("Interrupted %+v, deadline %v; want True and %s", c, m.Status.InterruptionDeadline, deadline)
					}
				}
				if !m.DeletionTimestamp.IsZero() && deleting.IsZero() {
					deleting = now
				}
				if meta.IsStatusConditionTrue(m.Status.Conditions, v1alpha1.DrainedCondition) && drained.IsZero() {
					drained = now
				}
			}
		case <-bound:
			t.Fatalf("the interrupted Machine %s is not gone 2 minutes after the warning (marked %v, replacement %q, deletion %v, drained %v)",
				victim.Name, marked, replacement, deleting, drained)
		}
	}
	s.eventually(time.Minute, "instance "+id+" terminated", func() (bool, error) {
		st, err := w.state(id)
		if st == types.InstanceStateNameTerminated && terminated.IsZero() {
			terminated = time.Now()
		}
		return !terminated.IsZero(), fmt.Errorf("%s (%v)", st, err)
	})
	since := func(at time.Time) string {
		if at.IsZero() {
			return "never"
		}
		return fmt.Sprintf("+%.2fs", at.Sub(warned).Seconds())
	}
	t.Logf("figures: spot interruption of %s (%s), from the warning at %s (deadline +120s; the warning's time has whole seconds): marked Interrupted %s, replacement %s created %s, deletion started %s, Node drained %s, Machine gone %s, instance terminated by %s",
		victim.Name, id, warned.Format(time.RFC3339), since(marked), replacement, since(replaced), since(deleting), since(drained), since(gone), since(terminated))
	switch {
	case marked.IsZero() || replaced.IsZero() || deleting.IsZero() || drained.IsZero():
		t.Errorf("the watch never saw a step: the Machine must be marked, replaced, deleted and drained")
	case deleting.Before(replaced):
		t.Errorf("the interrupted Machine's deletion started before its replacement %s was created", replacement)
	case drained.After(deadline) || terminated.After(deadline):
		t.Errorf("the Node was drained or the instance terminated after the deadline %s", deadline)
	}
	s.waitEvent(victim.Name, "Interrupted", "EC2 Spot Instance Interruption Warning")
	s.checkInstancesOf(s.waitFleet(len(fleet), class, time.Minute))
}
