package aws

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// The EventBridge events the interruption queue carries: their
// detail-type and source, as EC2 and AWS Health send them and the rules of
// docs/providers/aws.md match them.
const (
	detailSpotInterruption = "EC2 Spot Instance Interruption Warning"
	detailRebalance        = "EC2 Instance Rebalance Recommendation"
	detailHealth           = "AWS Health Event"
	detailStateChange      = "EC2 Instance State-change Notification"
	sourceEC2              = "aws.ec2"
	sourceHealth           = "aws.health"
)

// spotWarning is how long before the interruption EC2 sends its
// interruption warning: the instance is taken two minutes after the
// event's time.
const spotWarning = 2 * time.Minute

// goingStates are the states of a state-change notification that mean the
// instance is going away now; the others (pending, running) announce
// nothing.
var goingStates = map[string]bool{"stopping": true, "stopped": true, "shutting-down": true, "terminated": true}

// instanceIDRE is what an instance ID looks like. An event's region is
// checked with the providerSpec's regionRE: the driver calls EC2 there, so
// a made-up value must not become a host name.
var instanceIDRE = regexp.MustCompile(`^i-[0-9a-f]{8}([0-9a-f]{9})?$`)

// eventBridgeEvent is the envelope of every EventBridge event.
type eventBridgeEvent struct {
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Time       string          `json:"time"`
	Region     string          `json:"region"`
	Detail     json.RawMessage `json:"detail"`
}

// ec2Detail is the detail of the three aws.ec2 events; each uses some of it.
type ec2Detail struct {
	InstanceID     string `json:"instance-id"`
	InstanceAction string `json:"instance-action"`
	State          string `json:"state"`
}

// healthDetail is the detail of an AWS Health event, the fields the driver
// reads.
type healthDetail struct {
	Service           string `json:"service"`
	EventTypeCode     string `json:"eventTypeCode"`
	EventTypeCategory string `json:"eventTypeCategory"`
	StartTime         string `json:"startTime"`
	AffectedEntities  []struct {
		EntityValue string `json:"entityValue"`
	} `json:"affectedEntities"`
}

// notice is what one message announces: one kind of event about one or
// more instances of one region.
type notice struct {
	kind      driver.VMEventKind
	region    string
	time      time.Time
	deadline  time.Time
	instances []string
	message   string
}

// parseNotice reads one message body. A body that announces nothing the
// manager acts on returns nil and why, for the log: malformed JSON,
// another kind of event, a state that is not going away.
func parseNotice(body string) (*notice, string) {
	var e eventBridgeEvent
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		return nil, fmt.Sprintf("not an EventBridge event: %v", err)
	}
	at, err := time.Parse(time.RFC3339, e.Time)
	if err != nil {
		return nil, fmt.Sprintf("%q: time %q is not RFC 3339", e.DetailType, e.Time)
	}
	if e.Region != "" && !regionRE.MatchString(e.Region) {
		return nil, fmt.Sprintf("%q: region %q is not a region", e.DetailType, e.Region)
	}
	n := &notice{region: e.Region, time: at}
	switch {
	case e.Source == sourceEC2 && e.DetailType == detailSpotInterruption:
		d, why := ec2DetailOf(e)
		if why != "" {
			return nil, why
		}
		n.kind, n.deadline, n.instances = driver.VMInterruption, at.Add(spotWarning), []string{d.InstanceID}
		n.message = e.DetailType + ": instance-action " + d.InstanceAction
	case e.Source == sourceEC2 && e.DetailType == detailRebalance:
		d, why := ec2DetailOf(e)
		if why != "" {
			return nil, why
		}
		n.kind, n.instances, n.message = driver.VMRebalanceRecommendation, []string{d.InstanceID}, e.DetailType
	case e.Source == sourceEC2 && e.DetailType == detailStateChange:
		d, why := ec2DetailOf(e)
		if why != "" {
			return nil, why
		}
		if !goingStates[d.State] {
			return nil, fmt.Sprintf("%q: state %q is not going away", e.DetailType, d.State)
		}
		// The instance is already going: its deadline is now.
		n.kind, n.deadline, n.instances = driver.VMInterruption, at, []string{d.InstanceID}
		n.message = e.DetailType + ": state " + d.State
	case e.Source == sourceHealth && e.DetailType == detailHealth:
		return healthNotice(e, n)
	default:
		return nil, fmt.Sprintf("%q from %q is not an event the driver reads", e.DetailType, e.Source)
	}
	return n, ""
}

func ec2DetailOf(e eventBridgeEvent) (ec2Detail, string) {
	var d ec2Detail
	if err := json.Unmarshal(e.Detail, &d); err != nil {
		return d, fmt.Sprintf("%q: detail: %v", e.DetailType, err)
	}
	if !instanceIDRE.MatchString(d.InstanceID) {
		return d, fmt.Sprintf("%q: detail.instance-id %q is not an instance ID", e.DetailType, d.InstanceID)
	}
	return d, ""
}

// healthNotice reads an AWS Health event: only EC2's scheduled changes
// (retirements, maintenance that stops or reboots the instance) interrupt
// instances; the affected entities that are instance IDs are the ones.
func healthNotice(e eventBridgeEvent, n *notice) (*notice, string) {
	var d healthDetail
	if err := json.Unmarshal(e.Detail, &d); err != nil {
		return nil, fmt.Sprintf("%q: detail: %v", e.DetailType, err)
	}
	if d.Service != "EC2" || d.EventTypeCategory != "scheduledChange" {
		return nil, fmt.Sprintf("%q of service %q, category %q is not an EC2 scheduled change", e.DetailType, d.Service, d.EventTypeCategory)
	}
	seen := map[string]bool{}
	for _, a := range d.AffectedEntities {
		if instanceIDRE.MatchString(a.EntityValue) && !seen[a.EntityValue] {
			seen[a.EntityValue] = true
			n.instances = append(n.instances, a.EntityValue)
		}
	}
	if len(n.instances) == 0 {
		return nil, fmt.Sprintf("%q %s names no instance", e.DetailType, d.EventTypeCode)
	}
	n.kind = driver.VMInterruption
	n.deadline = healthTime(d.StartTime)
	var b strings.Builder
	b.WriteString(e.DetailType + ": " + d.EventTypeCode)
	if d.StartTime != "" {
		b.WriteString(" starting " + d.StartTime)
	}
	n.message = b.String()
	return n, ""
}

// healthTime parses a Health event's startTime: AWS Health writes it as
// in HTTP headers ("Sat, 05 Jun 2016 15:10:09 GMT"); RFC 3339 is taken too.
// Zero when absent or unreadable: the deadline is then unknown.
func healthTime(s string) time.Time {
	for _, layout := range []string{time.RFC1123, time.RFC1123Z, time.RFC3339} {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	return time.Time{}
}
