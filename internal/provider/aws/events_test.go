package aws

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/millwright-dev/millwright/pkg/driver"
	"github.com/millwright-dev/millwright/pkg/driver/drivertest"
)

// eventTime is the time of every event the tests post, so deadlines can be
// checked exactly.
var eventTime = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

// rawSQS is an SQS client of moto that is not the driver's, to make the
// queue, post the events and look at what is left.
func rawSQS() *sqs.Client {
	return sqs.NewFromConfig(awssdk.Config{Region: testRegion,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDMILLWRIGHTTEST", "secret", "")},
		func(o *sqs.Options) { o.BaseEndpoint = awssdk.String(moto.URL) })
}

// newQueue makes a queue of the test's own through the SQS API.
func newQueue(t testing.TB) string {
	t.Helper()
	name := regexp.MustCompile(`[^A-Za-z0-9_-]`).ReplaceAllString(t.Name(), "-")
	out, err := rawSQS().CreateQueue(ctxT(t), &sqs.CreateQueueInput{QueueName: awssdk.String(name)})
	if err != nil {
		t.Fatalf("CreateQueue: %v", err)
	}
	return awssdk.ToString(out.QueueUrl)
}

// eventsDriver is the test's driver reading queue, with the default
// chain's credentials (the queue's calls use them) and a visibility
// timeout of 1 s, unless mod changes them.
func eventsDriver(t testing.TB, queue string, mod ...func(*Options)) *Driver {
	t.Helper()
	if tt, ok := t.(*testing.T); ok {
		tt.Setenv("AWS_ACCESS_KEY_ID", "AKIDMILLWRIGHTTEST")
		tt.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	}
	return newDriver(t, "", append([]func(*Options){func(o *Options) {
		o.InterruptionQueueURL, o.QueueRegion, o.SQSEndpoint = queue, testRegion, moto.URL
		o.VisibilityTimeout = time.Second
	}}, mod...)...)
}

func post(t testing.TB, queue string, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		if _, err := rawSQS().SendMessage(ctxT(t), &sqs.SendMessageInput{QueueUrl: awssdk.String(queue), MessageBody: awssdk.String(b)}); err != nil {
			t.Fatalf("SendMessage: %v", err)
		}
	}
}

// queued is how many messages the queue holds, visible or not.
func queued(t testing.TB, queue string) int {
	t.Helper()
	out, err := rawSQS().GetQueueAttributes(ctxT(t), &sqs.GetQueueAttributesInput{QueueUrl: awssdk.String(queue),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatalf("GetQueueAttributes: %v", err)
	}
	n := 0
	for _, v := range out.Attributes {
		i, _ := strconv.Atoi(v)
		n += i
	}
	return n
}

// The bodies of the four events, as EventBridge delivers them to SQS.
func spotBody(id string) string {
	return fmt.Sprintf(`{"version":"0","id":"1e5527d7-bb36-4607-3370-4164db56a40e","detail-type":"EC2 Spot Instance Interruption Warning",
"source":"aws.ec2","account":"123456789012","time":%q,"region":"us-east-1",
"resources":["arn:aws:ec2:us-east-1b:instance/%s"],"detail":{"instance-id":%q,"instance-action":"terminate"}}`, eventTime.Format(time.RFC3339), id, id)
}

func rebalanceBody(id string) string {
	return fmt.Sprintf(`{"version":"0","id":"5f2b0b7e-0a3c-4d8e-9c1a-3b6f2e1d4c5a","detail-type":"EC2 Instance Rebalance Recommendation",
"source":"aws.ec2","account":"123456789012","time":%q,"region":"us-east-1",
"resources":["arn:aws:ec2:us-east-1b:instance/%s"],"detail":{"instance-id":%q}}`, eventTime.Format(time.RFC3339), id, id)
}

func healthBody(start string, ids ...string) string {
	var ents []string
	for _, id := range ids {
		ents = append(ents, fmt.Sprintf(`{"entityValue":%q,"tags":{"team":"platform"}}`, id))
	}
	return fmt.Sprintf(`{"version":"0","id":"7fb65329-1628-4cf3-a740-95fg457h1402","detail-type":"AWS Health Event",
"source":"aws.health","account":"123456789012","time":%q,"region":"us-east-1","resources":[%q],
"detail":{"eventArn":"arn:aws:health:us-east-1::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/x","service":"EC2",
"eventTypeCode":"AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED","eventTypeCategory":"scheduledChange","startTime":%q,
"eventDescription":[{"language":"en_US","latestDescription":"The instance is scheduled for retirement."}],
"affectedEntities":[%s]}}`, eventTime.Format(time.RFC3339), ids[0], start, strings.Join(ents, ","))
}

func stateBody(id, state string) string {
	return fmt.Sprintf(`{"version":"0","id":"7bf73129-1428-4cd3-a780-95db273d1602","detail-type":"EC2 Instance State-change Notification",
"source":"aws.ec2","account":"123456789012","time":%q,"region":"us-east-1",
"resources":["arn:aws:ec2:us-east-1:123456789012:instance/%s"],"detail":{"instance-id":%q,"state":%q}}`, eventTime.Format(time.RFC3339), id, id, state)
}

func receive(t testing.TB, d *Driver, wait time.Duration, acks ...string) []driver.VMEvent {
	t.Helper()
	resp, err := d.ReceiveEvents(ctxT(t), &driver.ReceiveEventsRequest{Acknowledged: acks, Wait: wait})
	if err != nil {
		t.Fatalf("ReceiveEvents: %v", err)
	}
	return resp.Events
}

// launched is an instance the driver launched for a Machine.
type launched struct{ id, providerID, uid string }

func launch(t testing.TB, d *Driver, names ...string) []launched {
	t.Helper()
	var out []launched
	for _, n := range names {
		m := machine(n)
		r := create(t, d, class("events", validSpec), m)
		id, err := ParseProviderID(r.ProviderID)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, launched{id: id, providerID: r.ProviderID, uid: string(m.UID)})
	}
	return out
}

// byKey indexes events by kind and instance ID.
func byKey(t testing.TB, events []driver.VMEvent) map[string]driver.VMEvent {
	t.Helper()
	m := map[string]driver.VMEvent{}
	for _, e := range events {
		id, err := ParseProviderID(e.ProviderID)
		if err != nil {
			t.Fatalf("event %+v: %v", e, err)
		}
		k := string(e.Kind) + " " + id + " " + e.Message
		if _, dup := m[k]; dup {
			t.Fatalf("two events %s", k)
		}
		m[k] = e
	}
	return m
}

// TestReceiveEventsOfEachKind posts the real JSON of each kind of event
// about instances the driver launched and checks what each becomes: kind,
// providerID, Machine UID, deadline and message; a state change to
// running becomes nothing and its message is deleted; once every event is
// acknowledged the queue is empty.
func TestReceiveEventsOfEachKind(t *testing.T) {
	q := newQueue(t)
	d := eventsDriver(t, q)
	in := launch(t, d, "ev-a", "ev-b", "ev-c")
	a, b, c := in[0], in[1], in[2]
	start := "Sat, 05 Dec 2026 15:10:09 GMT"
	post(t, q, spotBody(a.id), rebalanceBody(b.id), healthBody(start, a.id, c.id), stateBody(b.id, "stopping"), stateBody(c.id, "running"))
	events := receive(t, d, 2*time.Second)
	got := byKey(t, events)
	startTime := time.Date(2026, 12, 5, 15, 10, 9, 0, time.UTC)
	want := []struct {
		key      string
		inst     launched
		deadline time.Time
	}{
		{"Interruption " + a.id + " EC2 Spot Instance Interruption Warning: instance-action terminate", a, eventTime.Add(2 * time.Minute)},
		{"RebalanceRecommendation " + b.id + " EC2 Instance Rebalance Recommendation", b, time.Time{}},
		{"Interruption " + a.id + " AWS Health Event: AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED starting " + start, a, startTime},
		{"Interruption " + c.id + " AWS Health Event: AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED starting " + start, c, startTime},
		{"Interruption " + b.id + " EC2 Instance State-change Notification: state stopping", b, eventTime},
	}
	if len(events) != len(want) {
		t.Errorf("%d events, want %d: %+v", len(events), len(want), events)
	}
	var acks []string
	for _, w := range want {
		e, ok := got[w.key]
		if !ok {
			t.Errorf("no event %q in %+v", w.key, events)
			continue
		}
		if e.ProviderID != w.inst.providerID || e.MachineUID != w.inst.uid || !e.Time.Equal(eventTime) || !e.Deadline.Equal(w.deadline) {
			t.Errorf("%s: providerID %s, UID %s, time %s, deadline %s; want %s, %s, %s, %s", w.key, e.ProviderID, e.MachineUID, e.Time, e.Deadline,
				w.inst.providerID, w.inst.uid, eventTime, w.deadline)
		}
		acks = append(acks, e.ID)
	}
	if n := queued(t, q); n != 4 {
		t.Errorf("the queue holds %d messages before the acknowledgements; want the 4 with events (the running state's is deleted)", n)
	}
	if events := receive(t, d, 0, acks...); len(events) != 0 {
		t.Errorf("events after acknowledging all: %+v", events)
	}
	if n := queued(t, q); n != 0 {
		t.Errorf("the queue holds %d messages after every event was acknowledged", n)
	}
}

// TestUnacknowledgedEventsComeBack checks that an acknowledged event never
// comes back and one that is not comes back after the visibility timeout,
// with a new ID that acknowledges it.
func TestUnacknowledgedEventsComeBack(t *testing.T) {
	q := newQueue(t)
	d := eventsDriver(t, q)
	in := launch(t, d, "back-a", "back-b")
	post(t, q, spotBody(in[0].id), spotBody(in[1].id))
	// SQS delivers a message at least once, and a send the SDK retried
	// is two messages (CI saw a's twice): events are counted by instance.
	first := byProviderID(receive(t, d, 2*time.Second))
	if len(first) != 2 || len(first[in[0].providerID]) == 0 || len(first[in[1].providerID]) == 0 {
		t.Fatalf("events by providerID %v, want a's and b's", first)
	}
	// Acknowledge a's; b's comes back once its visibility timeout (1 s) is
	// over: the long poll waits for it.
	var again []driver.VMEvent
	acks := first[in[0].providerID]
	deadline := time.Now().Add(20 * time.Second)
	for len(again) == 0 && time.Now().Before(deadline) {
		again = receive(t, d, 2*time.Second, acks...)
		acks = nil
	}
	back := byProviderID(again)
	if len(back) != 1 || len(back[in[1].providerID]) == 0 {
		t.Fatalf("after acknowledging a's events: %+v; want b's alone", again)
	}
	for _, id := range back[in[1].providerID] {
		if slices.Contains(first[in[1].providerID], id) {
			t.Errorf("the event came back with its first ID %q; SQS gave its message a new receipt handle", id)
		}
	}
	if events := receive(t, d, 0, back[in[1].providerID]...); len(events) != 0 {
		t.Errorf("events after acknowledging b's: %+v", events)
	}
	time.Sleep(1500 * time.Millisecond) // past the visibility timeout: nothing is hidden
	if events := receive(t, d, 1*time.Second); len(events) != 0 {
		t.Errorf("acknowledged events came back: %+v", events)
	}
	if n := queued(t, q); n != 0 {
		t.Errorf("the queue holds %d messages", n)
	}
}

// byProviderID groups the events' IDs by the providerID they are about.
func byProviderID(events []driver.VMEvent) map[string][]string {
	out := map[string][]string{}
	for _, e := range events {
		out[e.ProviderID] = append(out[e.ProviderID], e.ID)
	}
	return out
}

// TestHealthEventIsDeletedWhenAllItsEventsAre checks the choice for a
// message about several instances: acknowledging one of its events keeps
// it, and it comes back with every event, until all are acknowledged.
func TestHealthEventIsDeletedWhenAllItsEventsAre(t *testing.T) {
	q := newQueue(t)
	d := eventsDriver(t, q)
	in := launch(t, d, "health-a", "health-b")
	post(t, q, healthBody("Sat, 05 Dec 2026 15:10:09 GMT", in[0].id, in[1].id))
	first := receive(t, d, 2*time.Second)
	if len(first) != 2 {
		t.Fatalf("%d events, want 2: %+v", len(first), first)
	}
	acks := []string{first[0].ID}
	var again []driver.VMEvent
	deadline := time.Now().Add(20 * time.Second)
	for len(again) == 0 && time.Now().Before(deadline) {
		again = receive(t, d, 2*time.Second, acks...)
		acks = nil
	}
	if len(again) != 2 {
		t.Fatalf("after acknowledging one of two events: %+v; want both again", again)
	}
	if events := receive(t, d, 0, again[0].ID, again[1].ID); len(events) != 0 {
		t.Errorf("events after acknowledging both: %+v", events)
	}
	if n := queued(t, q); n != 0 {
		t.Errorf("the queue holds %d messages after both events were acknowledged", n)
	}
}

// TestEventsOfOtherInstancesAreDropped checks that an event about an
// instance of another cluster (launched directly through EC2 with that
// cluster's tag) or one EC2 does not know gives no event and its message
// is deleted, while the event of ours in the same batch is answered.
func TestEventsOfOtherInstancesAreDropped(t *testing.T) {
	q := newQueue(t)
	d := eventsDriver(t, q)
	ours := launch(t, d, "mine")[0]
	out, err := rawEC2().RunInstances(ctxT(t), &ec2.RunInstancesInput{ImageId: awssdk.String(testAMI), InstanceType: types.InstanceTypeT3Micro,
		MinCount: awssdk.Int32(1), MaxCount: awssdk.Int32(1),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeInstance, Tags: []types.Tag{
			{Key: awssdk.String(ClusterTag("another-cluster")), Value: awssdk.String(clusterTagValue)},
			{Key: awssdk.String(TagMachineUID), Value: awssdk.String("uid-of-another")}}}}})
	if err != nil {
		t.Fatalf("RunInstances: %v", err)
	}
	theirs := awssdk.ToString(out.Instances[0].InstanceId)
	post(t, q, spotBody(theirs), healthBody("Sat, 05 Dec 2026 15:10:09 GMT", theirs, "i-0123456789abcdef0"), spotBody(ours.id))
	events := receive(t, d, 2*time.Second)
	if len(events) != 1 || events[0].ProviderID != ours.providerID {
		t.Fatalf("events: %+v; want only the one about %s", events, ours.id)
	}
	if n := queued(t, q); n != 1 {
		t.Errorf("the queue holds %d messages; want 1, ours (the others are deleted)", n)
	}
}

// TestMalformedMessagesAreDropped checks that bodies that are not one of
// the four events, or are but cannot be read, give no event and are
// deleted.
func TestMalformedMessagesAreDropped(t *testing.T) {
	q := newQueue(t)
	d := eventsDriver(t, q)
	id := launch(t, d, "malformed")[0].id
	good := spotBody(id)
	post(t, q,
		"not json at all",
		`{"detail-type":"Object Created","source":"aws.s3","time":"2026-12-03T10:00:00Z","detail":{}}`,
		strings.Replace(good, eventTime.Format(time.RFC3339), "yesterday", 1),
		strings.Replace(good, `"instance-id":"`+id+`"`, `"instance-id":"vol-0123"`, 1),
		strings.Replace(good, `"region":"us-east-1"`, `"region":"evil.example.com/"`, 1),
		strings.Replace(healthBody("x", id), `"service":"EC2"`, `"service":"RDS"`, 1),
		`{"detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","time":"2026-12-03T10:00:00Z","detail":"terminate"}`,
	)
	if events := receive(t, d, 2*time.Second); len(events) != 0 {
		t.Fatalf("events of malformed messages: %+v", events)
	}
	if n := queued(t, q); n != 0 {
		t.Errorf("the queue holds %d messages; the malformed ones must be deleted", n)
	}
}

// answer is what a ReceiveEvents call answered.
type answer struct {
	events []driver.VMEvent
	err    error
}

// receiveMeanwhile starts a ReceiveEvents call of up to wait on ctx and
// returns once its long poll has had the time to reach moto, with the
// call's answer to come. Nothing a test can see marks the poll's arrival,
// hence the fixed half second: were it too short, the tests below would
// prove less (the event posted before the poll began), not fail.
func receiveMeanwhile(ctx context.Context, d *Driver, wait time.Duration) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		resp, err := d.ReceiveEvents(ctx, &driver.ReceiveEventsRequest{Wait: wait})
		if err != nil {
			ch <- answer{err: err}
			return
		}
		ch <- answer{events: resp.Events}
	}()
	time.Sleep(500 * time.Millisecond)
	return ch
}

// TestLongPollGetsALaterEvent checks that a call waiting for events gets
// one posted while it waits.
func TestLongPollGetsALaterEvent(t *testing.T) {
	q := newQueue(t)
	d := eventsDriver(t, q)
	in := launch(t, d, "longpoll")[0]
	got := receiveMeanwhile(context.Background(), d, 15*time.Second)
	post(t, q, spotBody(in.id))
	a := <-got
	if a.err != nil {
		t.Fatalf("ReceiveEvents: %v", a.err)
	}
	if len(a.events) != 1 || a.events[0].ProviderID != in.providerID {
		t.Fatalf("the long poll answered %+v; want the event posted during it", a.events)
	}
}

// TestAbandonedLongPollLosesNothing checks that a call given up while it
// long-polls (its manager killed) leaves no message to SQS's visibility
// timeout: SQS still answers an abandoned long poll, and hides what it
// hands to no one for that long (30 s here, a quarter of a spot
// interruption's warning). The next call gets the event at once.
func TestAbandonedLongPollLosesNothing(t *testing.T) {
	q := newQueue(t)
	d := eventsDriver(t, q, func(o *Options) { o.VisibilityTimeout = 30 * time.Second })
	in := launch(t, d, "abandoned")[0]
	ctx, cancel := context.WithCancel(ctxT(t))
	ended := receiveMeanwhile(ctx, d, 5*time.Second)
	cancel()
	select {
	case a := <-ended:
		if a.err == nil {
			t.Fatal("the call given up answered without an error")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the call given up did not end with its context")
	}
	post(t, q, spotBody(in.id))
	if events := receive(t, d, 3*time.Second); len(events) != 1 || events[0].ProviderID != in.providerID {
		t.Fatalf("the next call answered %+v; want the event posted while the abandoned long poll ran", events)
	}
}

// TestReceiveEventsNeedsAQueue checks GetPluginInfo and ReceiveEvents with
// and without a queue.
func TestReceiveEventsNeedsAQueue(t *testing.T) {
	for _, withQueue := range []bool{false, true} {
		d := newDriver(t, "")
		if withQueue {
			d = eventsDriver(t, newQueue(t))
		}
		info, err := d.GetPluginInfo(ctxT(t), &driver.GetPluginInfoRequest{})
		if err != nil {
			t.Fatal(err)
		}
		listed := false
		for _, m := range info.Implements {
			listed = listed || m == driver.MethodReceiveEvents
		}
		_, err = d.ReceiveEvents(ctxT(t), &driver.ReceiveEventsRequest{})
		if listed != withQueue || (driver.CodeOf(err) == driver.Unimplemented) == withQueue {
			t.Errorf("with a queue %v: GetPluginInfo lists ReceiveEvents %v, ReceiveEvents: %v", withQueue, listed, err)
		}
	}
}

// TestConformanceWithInterruptionQueue runs the conformance suite against
// a driver that reads a queue: ReceiveEvents is listed and answers.
func TestConformanceWithInterruptionQueue(t *testing.T) {
	drivertest.Run(t, drivertest.Config{
		Driver:       drivertest.OverGRPC(t, eventsDriver(t, newQueue(t))),
		Class:        class("conformance-events", validSpec),
		Secret:       testSecret(),
		InvalidClass: class("conformance-events-invalid", invalidSpec),
	})
}

// TestReceiveEventsErrors checks the driver codes of a queue that does
// not exist and of an SQS that does not answer.
func TestReceiveEventsErrors(t *testing.T) {
	d := eventsDriver(t, moto.URL+"/123456789012/no-such-queue")
	_, err := d.ReceiveEvents(ctxT(t), &driver.ReceiveEventsRequest{})
	if driver.CodeOf(err) != driver.FailedPrecondition || !strings.Contains(driver.MessageOf(err), "no-such-queue") {
		t.Errorf("a queue that does not exist: %v; want FailedPrecondition naming it", err)
	}
	dead := newDriver(t, "", func(o *Options) {
		o.InterruptionQueueURL, o.QueueRegion, o.SQSEndpoint = "http://127.0.0.1:1/123456789012/q", testRegion, "http://127.0.0.1:1"
	})
	_, err = dead.ReceiveEvents(ctxT(t), &driver.ReceiveEventsRequest{})
	if driver.CodeOf(err) != driver.Unavailable || !strings.Contains(driver.MessageOf(err), "SQS unreachable") {
		t.Errorf("SQS unreachable: %v; want Unavailable saying SQS unreachable", err)
	}
}

// TestAnotherRegionsFailureDoesNotHoldUpTheQueue checks that an event of a
// region whose EC2 refuses the lookup (moto knows no region zz-nowhere-1)
// leaves its message for later without keeping the queue's own events
// from being answered.
func TestAnotherRegionsFailureDoesNotHoldUpTheQueue(t *testing.T) {
	q := newQueue(t)
	d := eventsDriver(t, q)
	in := launch(t, d, "region")[0]
	post(t, q, strings.Replace(spotBody("i-0123456789abcdef0"), `"region":"us-east-1"`, `"region":"zz-nowhere-1"`, 1), spotBody(in.id))
	events := receive(t, d, 2*time.Second)
	if len(events) != 1 || events[0].ProviderID != in.providerID {
		t.Fatalf("events: %+v; want the one of the queue's region", events)
	}
	if n := queued(t, q); n != 2 {
		t.Errorf("the queue holds %d messages; want both (the other region's is left to try again)", n)
	}
}
