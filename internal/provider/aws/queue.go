package aws

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// SQS's limits the driver works within.
const (
	// sqsBatch is the most messages one ReceiveMessage returns and one
	// DeleteMessageBatch deletes.
	sqsBatch = 10
	// sqsMaxWait is ReceiveMessage's longest long poll.
	sqsMaxWait = 20 * time.Second
)

// ackWindow is how long the driver remembers a message it answered with:
// an acknowledgement later than that (or after a restart of the driver)
// deletes nothing, and the message comes back after its visibility
// timeout and is answered again, which the manager records again.
const ackWindow = time.Hour

// eventIDSeparator joins a message's receipt handle and an instance ID in
// an event's ID. SQS receipt handles are base64 and never contain it.
const eventIDSeparator = "|"

// eventID is the ID of the event about instance of the message received
// with handle: acknowledging it names both.
func eventID(handle, instance string) string { return handle + eventIDSeparator + instance }

// parseEventID splits an event's ID; ok is false for an ID the driver did
// not make.
func parseEventID(id string) (handle, instance string, ok bool) {
	i := strings.LastIndex(id, eventIDSeparator)
	if i <= 0 || i == len(id)-1 {
		return "", "", false
	}
	return id[:i], id[i+1:], true
}

// sqsCodes are the SQS error codes whose driver code differs from what
// classify gives an unknown code. SQS answers with the JSON protocol's
// short code or the query protocol's long one, depending on the SDK.
var sqsCodes = map[string]driver.Code{
	"QueueDoesNotExist":                       driver.FailedPrecondition,
	"AWS.SimpleQueueService.NonExistentQueue": driver.FailedPrecondition,
	"AccessDenied":                            driver.PermissionDenied,
	"AccessDeniedException":                   driver.PermissionDenied,
	"KmsAccessDenied":                         driver.PermissionDenied,
	"KmsDisabled":                             driver.FailedPrecondition,
	"RequestThrottled":                        driver.Unavailable,
	"KmsThrottled":                            driver.Unavailable,
	"ThrottlingException":                     driver.Unavailable,
	"InvalidAddress":                          driver.FailedPrecondition,
	"InvalidSecurity":                         driver.FailedPrecondition,
}

// sqsError is err of an SQS call as a driver error: SQS's own codes first,
// then the codes and conditions EC2's calls share (credentials, 5xx,
// transport, the call's end).
func sqsError(ctx context.Context, err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	code := classify(ctx, err)
	msg := err.Error()
	var ae smithy.APIError
	if errors.As(err, &ae) {
		if c, ok := sqsCodes[ae.ErrorCode()]; ok {
			code = c
		}
		msg = ae.ErrorCode() + ": " + ae.ErrorMessage()
	} else if code == driver.Unavailable {
		msg = "SQS unreachable: " + msg
	}
	if code == driver.Unauthenticated {
		msg = "no usable AWS credentials for the interruption queue (the driver's default chain): " + msg
	}
	return driver.Errorf(code, "%s: %s", what, msg)
}

// queue is the interruption queue's client and what ReceiveEvents keeps
// between calls: the messages answered and not yet acknowledged, and the
// deletes still to make.
type queue struct {
	// calls serializes ReceiveEvents: the manager makes one call at a time,
	// and two would acknowledge and receive over each other.
	calls sync.Mutex
	mu    sync.Mutex
	sqs   *sqs.Client
	// answered maps a receipt handle to its message's events not yet
	// acknowledged.
	answered map[string]*answered
	// deletes are the receipt handles to delete: every event
	// acknowledged, or the message announces nothing of ours.
	deletes []string
	// polling is the long poll a call gave up on, still running or done
	// and unread: the next call takes its messages (guarded by calls).
	polling *poll
}

// poll is one ReceiveMessage, run apart from the call that started it.
type poll struct {
	done chan struct{}
	msgs []sqstypes.Message
	err  error
}

// answered is a message ReceiveEvents answered with.
type answered struct {
	at time.Time
	// pending are the instance IDs whose events are not yet acknowledged.
	pending map[string]bool
}

// sqsClient returns the queue's client, made on first use with the
// driver's own credentials (the default chain): the queue is not about
// one class.
func (d *Driver) sqsClient(ctx context.Context) (*sqs.Client, error) {
	q := &d.queue
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.sqs != nil {
		return q.sqs, nil
	}
	cfg, err := d.awsConfig(ctx, d.opts.QueueRegion, creds{})
	if err != nil {
		return nil, err
	}
	q.sqs = sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		if d.opts.SQSEndpoint != "" {
			o.BaseEndpoint = aws.String(d.opts.SQSEndpoint)
		}
	})
	return q.sqs, nil
}

// acknowledge forgets the acknowledged events; a message all of whose
// events are acknowledged is to be deleted. An ID the driver does not
// know (made before a restart, acknowledged twice, too late) is logged:
// its message, if still there, comes back and is answered again.
func (d *Driver) acknowledge(ids []string) {
	q := &d.queue
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, id := range ids {
		handle, inst, ok := parseEventID(id)
		a := q.answered[handle]
		if !ok || a == nil || !a.pending[inst] {
			d.opts.Logger.Info("acknowledged interruption event not known: its message, if still queued, is answered again", "id", truncate(id, 80))
			continue
		}
		delete(a.pending, inst)
		if len(a.pending) == 0 {
			delete(q.answered, handle)
			q.deletes = append(q.deletes, handle)
		}
	}
}

// remember records a message answered with events about instances.
func (d *Driver) remember(handle string, instances []string, now time.Time) {
	q := &d.queue
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.answered == nil {
		q.answered = map[string]*answered{}
	}
	a := &answered{at: now, pending: map[string]bool{}}
	for _, i := range instances {
		a.pending[i] = true
	}
	q.answered[handle] = a
	for h, a := range q.answered {
		if now.Sub(a.at) > ackWindow {
			delete(q.answered, h)
		}
	}
}

// drop queues the deletion of a message that announces nothing of ours.
func (d *Driver) drop(handle string) {
	q := &d.queue
	q.mu.Lock()
	defer q.mu.Unlock()
	q.deletes = append(q.deletes, handle)
}

// deleteQueued deletes the messages to delete, 10 at a time. A handle SQS
// refuses (expired, already deleted) is logged, not an error: its message
// is gone or comes back to be answered again. A failed call keeps the
// handles it did not delete for the next call and returns the error.
func (d *Driver) deleteQueued(ctx context.Context, c *sqs.Client) error {
	q := &d.queue
	q.mu.Lock()
	handles := q.deletes
	q.deletes = nil
	q.mu.Unlock()
	for len(handles) > 0 {
		n := min(len(handles), sqsBatch)
		batch := handles[:n]
		entries := make([]sqstypes.DeleteMessageBatchRequestEntry, n)
		for i, h := range batch {
			entries[i] = sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: aws.String(h)}
		}
		out, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(d.opts.InterruptionQueueURL), Entries: entries})
		if err != nil {
			q.mu.Lock()
			q.deletes = append(q.deletes, handles...)
			q.mu.Unlock()
			return sqsError(ctx, err, "deleting %d acknowledged messages of the interruption queue", len(handles))
		}
		for _, f := range out.Failed {
			d.opts.Logger.Info("interruption message not deleted (its receipt handle expired, or it was deleted already)",
				"code", aws.ToString(f.Code), "message", aws.ToString(f.Message))
		}
		handles = handles[n:]
	}
	return nil
}

// pollMargin is how long past its wait a long poll may take to answer
// before it is given up.
const pollMargin = 10 * time.Second

// longPoll answers with the messages of a long poll of up to wait: the
// one a call before gave up on, if any, or a new one. The poll runs on a
// context of its own: a call that ends first (its manager killed or
// restarted) leaves it running for the next call. SQS still answers a
// long poll its client abandoned, and hides the messages it hands to no
// one for the visibility timeout: an interruption warning lost for 30 s
// of its 120 (docs/providers/aws.md).
func (d *Driver) longPoll(ctx context.Context, c *sqs.Client, wait time.Duration) ([]sqstypes.Message, error) {
	q := &d.queue
	p := q.polling
	if p == nil {
		p = &poll{done: make(chan struct{})}
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait+pollMargin)
		go func() {
			defer close(p.done)
			defer cancel()
			p.msgs, p.err = d.receive(pctx, c, wait)
		}()
	}
	select {
	case <-p.done:
		q.polling = nil
		return p.msgs, p.err
	case <-ctx.Done():
		q.polling = p
		return nil, ctx.Err()
	}
}

// receive long-polls the queue for up to 10 messages.
func (d *Driver) receive(ctx context.Context, c *sqs.Client, wait time.Duration) ([]sqstypes.Message, error) {
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:            aws.String(d.opts.InterruptionQueueURL),
		MaxNumberOfMessages: sqsBatch,
		WaitTimeSeconds:     int32(wait / time.Second),
		VisibilityTimeout:   int32(d.opts.VisibilityTimeout / time.Second),
	})
	if err != nil {
		return nil, sqsError(ctx, err, "receiving from the interruption queue %s", d.opts.InterruptionQueueURL)
	}
	return out.Messages, nil
}

// waitOf is the long poll a call may make: what the manager allows, at
// most SQS's 20 s, in whole seconds (rounded down, so the call is never
// longer than asked), and ending a second before the call's deadline.
func waitOf(ctx context.Context, want time.Duration) time.Duration {
	w := min(want, sqsMaxWait)
	if dl, ok := ctx.Deadline(); ok {
		w = min(w, time.Until(dl)-time.Second)
	}
	return max(w, 0).Truncate(time.Second)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
