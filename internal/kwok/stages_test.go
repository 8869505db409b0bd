package kwok

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// stageRenderer renders a Stage's statusTemplate as kwok v0.8.0 does
// (pkg/utils/gotpl): sprig's functions and kwok's own, over the Node
// encoded to JSON and decoded into maps. Now is a clock the test moves.
type stageRenderer struct {
	t   *testing.T
	now time.Time
}

func (r *stageRenderer) render(stage string, node *corev1.Node) corev1.NodeStatus {
	r.t.Helper()
	data, err := stages.ReadFile("stages/" + stage)
	if err != nil {
		r.t.Fatal(err)
	}
	var st struct {
		Spec struct {
			Next struct {
				StatusTemplate string `json:"statusTemplate"`
			} `json:"next"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &st); err != nil {
		r.t.Fatal(err)
	}
	tmpl, err := template.New(stage).Funcs(sprig.TxtFuncMap()).Funcs(template.FuncMap{
		"Quote": func(s any) string {
			d, err := json.Marshal(s)
			if err != nil {
				return strconv.Quote(fmt.Sprint(s))
			}
			if len(d) > 0 && d[0] == '"' {
				return string(d)
			}
			return strconv.Quote(string(d))
		},
		"Now":            func() string { return r.now.Format(time.RFC3339Nano) },
		"NodeConditions": nodeConditions,
		"YAML": func(s any, _ ...int) (string, error) {
			d, err := yaml.Marshal(s)
			return string(d), err
		},
		"Version":  func() string { return "v0.8.0" },
		"NodeIP":   func() string { return "10.0.0.1" },
		"NodeName": func() string { return node.Name },
		"NodePort": func() int { return 10250 },
	}).Parse(st.Spec.Next.StatusTemplate)
	if err != nil {
		r.t.Fatalf("%s: %v", stage, err)
	}
	var obj any
	raw, err := json.Marshal(node)
	if err != nil {
		r.t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil {
		r.t.Fatal(err)
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, obj); err != nil {
		r.t.Fatalf("%s: %v", stage, err)
	}
	var status corev1.NodeStatus
	if err := yaml.Unmarshal(out.Bytes(), &status); err != nil {
		r.t.Fatalf("%s rendered %s: %v", stage, out.String(), err)
	}
	return status
}

// nodeConditions is kwok's NodeConditions: a kubelet's conditions of a
// healthy Node, as JSON maps.
func nodeConditions() any {
	conds := []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"},
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
		{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse, Reason: "RouteCreated", Message: "RouteController created a route"},
	}
	var out []any
	d, _ := json.Marshal(conds)
	_ = json.Unmarshal(d, &out)
	return out
}

// The node Stages give a condition the time its status last changed as
// lastTransitionTime, as a kubelet does, not the Node's creation time:
// a health check's timeout counts from it. kwok renders a Stage again
// every 1-2 s, which must keep the time.
func TestNodeStagesKeepLastTransitionTime(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &stageRenderer{t: t, now: created.Add(time.Minute)}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: "n", CreationTimestamp: metav1.NewTime(created),
		Annotations: map[string]string{NotReadyReasonAnnotation: "Sick"},
	}}
	apply := func(stage string) {
		t.Helper()
		node.Status = r.render(stage, node)
		node.Status.Phase = corev1.NodeRunning
	}
	// wantReady checks the Ready condition, and that the other conditions,
	// whose status never changes here, kept the time they first got.
	wantReady := func(step string, status corev1.ConditionStatus, since time.Time) {
		t.Helper()
		if len(node.Status.Conditions) != 5 {
			t.Fatalf("%s: conditions %+v", step, node.Status.Conditions)
		}
		for _, c := range node.Status.Conditions {
			want, wantSince := corev1.ConditionFalse, created.Add(time.Minute)
			if c.Type == corev1.NodeReady {
				want, wantSince = status, since
			}
			if c.Status != want || !c.LastTransitionTime.Time.Equal(wantSince) || !c.LastHeartbeatTime.Time.Equal(r.now) {
				t.Errorf("%s: %s is %s since %s (heartbeat %s), want %s since %s (heartbeat %s)", step, c.Type,
					c.Status, c.LastTransitionTime.UTC(), c.LastHeartbeatTime.UTC(), want, wantSince, r.now)
			}
		}
	}

	apply("node-initialize.yaml")
	readySince := r.now
	wantReady("registered", corev1.ConditionTrue, readySince)

	r.now = r.now.Add(time.Hour)
	apply("node-heartbeat-with-lease.yaml")
	wantReady("heartbeat", corev1.ConditionTrue, readySince)

	r.now = r.now.Add(time.Minute)
	apply("node-not-ready.yaml")
	notReadySince := r.now
	wantReady("made NotReady", corev1.ConditionFalse, notReadySince)
	if c := node.Status.Conditions[0]; c.Reason != "Sick" {
		t.Errorf("Ready reason %q, want the annotation's", c.Reason)
	}

	r.now = r.now.Add(2 * time.Second)
	apply("node-not-ready.yaml")
	wantReady("still NotReady", corev1.ConditionFalse, notReadySince)

	r.now = r.now.Add(time.Minute)
	apply("node-initialize.yaml")
	wantReady("recovered", corev1.ConditionTrue, r.now)
}
