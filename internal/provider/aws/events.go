package aws

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// maxFilterValues is how many values the driver puts in one EC2 filter
// (EC2 takes 200).
const maxFilterValues = 200

// ReceiveEvents reads the interruption queue (docs/providers/aws.md, "Spot
// interruptions and the interruption queue"): it deletes the messages
// whose events the manager acknowledged, receives up to 10 messages
// (waiting up to req.Wait, at most 20 s, for the first), and answers with
// an event per instance of this cluster that they name. A message that
// names nothing of this cluster's (another cluster's instance, another
// kind of event, a body that is not an event) is deleted and answered
// with nothing: the queue must be this cluster's alone.
//
// An event's ID is its message's receipt handle and its instance's ID.
// The message is deleted once every event it was answered with is
// acknowledged: a Health event about three instances whose manager
// recorded one and failed on two must come back for those two. Without
// --interruption-queue-url the call is Unimplemented.
func (d *Driver) ReceiveEvents(ctx context.Context, req *driver.ReceiveEventsRequest) (*driver.ReceiveEventsResponse, error) {
	if d.opts.InterruptionQueueURL == "" {
		return nil, driver.Errorf(driver.Unimplemented, "ReceiveEvents needs an interruption queue (millwright-aws --interruption-queue-url)")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if req == nil {
		req = &driver.ReceiveEventsRequest{}
	}
	d.queue.calls.Lock()
	defer d.queue.calls.Unlock()
	c, err := d.sqsClient(ctx)
	if err != nil {
		return nil, err
	}
	d.acknowledge(req.Acknowledged)
	if err := d.deleteQueued(ctx, c); err != nil {
		return nil, err
	}
	msgs, err := d.longPoll(ctx, c, waitOf(ctx, req.Wait))
	if err != nil {
		return nil, err
	}
	events, err := d.eventsOf(ctx, msgs)
	if err != nil {
		// Nothing is deleted: the messages come back after their
		// visibility timeout.
		return nil, err
	}
	// The messages that announced nothing of ours go now, so they do not
	// come back; one that fails to go is tried again by the next call.
	if err := d.deleteQueued(ctx, c); err != nil {
		d.opts.Logger.Warn("deleting interruption messages that name nothing of this cluster's; retried with the next receive", "err", err)
	}
	return &driver.ReceiveEventsResponse{Events: events}, nil
}

// received is a message and what it announces.
type received struct {
	msg    sqstypes.Message
	notice *notice
}

// eventsOf turns the messages into events: it parses each, looks up every
// instance they name with one DescribeInstances per region, scoped by the
// cluster's tag, and remembers each message answered with events until
// they are acknowledged; the others are queued for deletion.
func (d *Driver) eventsOf(ctx context.Context, msgs []sqstypes.Message) ([]driver.VMEvent, error) {
	var rs []received
	byRegion := map[string][]string{}
	for _, m := range msgs {
		n, why := parseNotice(aws.ToString(m.Body))
		if n == nil {
			d.opts.Logger.Info("interruption queue message announces nothing: deleted", "messageID", aws.ToString(m.MessageId), "why", why)
			d.drop(aws.ToString(m.ReceiptHandle))
			continue
		}
		if n.region == "" {
			n.region = d.opts.QueueRegion
		}
		rs = append(rs, received{msg: m, notice: n})
		byRegion[n.region] = append(byRegion[n.region], n.instances...)
	}
	found := map[string]*types.Instance{}
	failed := map[string]bool{}
	for region, ids := range byRegion {
		err := d.clusterInstances(ctx, region, ids, found)
		switch {
		case err == nil:
		case region == d.opts.QueueRegion:
			return nil, err
		default:
			// An event forwarded from another region whose EC2 cannot be
			// asked must not hold up the queue's own: its messages are
			// neither answered nor deleted, and come back to be tried again.
			d.opts.Logger.Warn("interruption events of another region left for later", "region", region, "err", err)
			failed[region] = true
		}
	}
	var events []driver.VMEvent
	now := time.Now()
	for _, r := range rs {
		handle := aws.ToString(r.msg.ReceiptHandle)
		if failed[r.notice.region] {
			continue
		}
		var ours []string
		for _, id := range r.notice.instances {
			inst := found[r.notice.region+"/"+id]
			if inst == nil {
				d.opts.Logger.Info("interruption event about an instance that is not this cluster's: ignored", "instance", id,
					"region", r.notice.region, "event", r.notice.message, "messageID", aws.ToString(r.msg.MessageId))
				continue
			}
			ours = append(ours, id)
			events = append(events, driver.VMEvent{
				ID:         eventID(handle, id),
				ProviderID: providerIDOf(inst),
				MachineUID: tagMap(inst.Tags)[TagMachineUID],
				Kind:       r.notice.kind,
				Time:       r.notice.time,
				Deadline:   r.notice.deadline,
				Message:    r.notice.message,
			})
		}
		if len(ours) == 0 {
			d.drop(handle)
			continue
		}
		d.remember(handle, ours, now)
	}
	return events, nil
}

// clusterInstances looks up the instances of ids in region that carry the
// cluster's tag, in any state (a terminated instance is still described
// for a while, and its event still matters), into found by region/ID. It
// uses the driver's own credentials, as the queue does.
func (d *Driver) clusterInstances(ctx context.Context, region string, ids []string, found map[string]*types.Instance) error {
	c, err := d.client(ctx, region, nil)
	if err != nil {
		return err
	}
	for len(ids) > 0 {
		n := min(len(ids), maxFilterValues)
		insts, err := d.describe(ctx, c, filter("instance-id", ids[:n]...), tagFilter(ClusterTag(d.opts.ClusterName), clusterTagValue))
		if err != nil {
			return ec2Error(ctx, err, "looking up the instances the interruption queue names in %s", region)
		}
		for i := range insts {
			found[region+"/"+aws.ToString(insts[i].InstanceId)] = &insts[i]
		}
		ids = ids[n:]
	}
	return nil
}
