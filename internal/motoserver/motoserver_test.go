package motoserver

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// ec2Call posts an EC2 query call (signed enough for moto to route it to
// EC2) and returns its status and body.
func ec2Call(t *testing.T, endpoint string, form url.Values) (int, string) {
	t.Helper()
	form.Set("Version", "2016-11-15")
	req, _ := http.NewRequest(http.MethodPost, endpoint+"/", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIDTEST/20260101/us-east-1/ec2/aws4_request, SignedHeaders=host, Signature=0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestStartServesEC2 checks that a started moto answers EC2 calls and
// that Reset empties it.
func TestStartServesEC2(t *testing.T) {
	s := Start(t)
	code, body := ec2Call(t, s.URL, url.Values{"Action": {"RunInstances"}, "ImageId": {"ami-12c6146b"},
		"MinCount": {"1"}, "MaxCount": {"1"}, "InstanceType": {"t3.micro"}})
	if code != 200 || !strings.Contains(body, "<instanceId>i-") {
		t.Fatalf("RunInstances: %d %s", code, body)
	}
	if err := s.Reset(); err != nil {
		t.Fatal(err)
	}
	if _, body := ec2Call(t, s.URL, url.Values{"Action": {"DescribeInstances"}}); strings.Contains(body, "<instanceId>") {
		t.Fatalf("instances left after Reset: %s", body)
	}
}

// TestMissingProgramFailsWithInstallHint checks the message a machine
// without moto gets: it says how to install it.
func TestMissingProgramFailsWithInstallHint(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := start(t.TempDir(), nil)
	if err == nil || !strings.Contains(err.Error(), "pip install 'moto[server]'") {
		t.Fatalf("start without moto_server on PATH: %v; want the install hint", err)
	}
}

// TestProxyInjectsFaults checks that a fault answers only the calls it
// matches, in EC2's error shape, as many times as asked, and that other
// calls reach moto.
func TestProxyInjectsFaults(t *testing.T) {
	s := Start(t)
	p := NewProxy(t, s.URL)
	f := p.Fail(&Fault{Action: "RunInstances", Match: map[string]string{"InstanceMarketOptions.MarketType": "spot"},
		Code: "InsufficientInstanceCapacity", Times: 1})
	run := url.Values{"Action": {"RunInstances"}, "ImageId": {"ami-12c6146b"}, "MinCount": {"1"}, "MaxCount": {"1"}}
	spot := url.Values{"InstanceMarketOptions.MarketType": {"spot"}}
	for k, v := range run {
		spot[k] = v
	}
	code, body := ec2Call(t, p.URL, spot)
	if code != 400 || !strings.Contains(body, "<Errors><Error><Code>InsufficientInstanceCapacity</Code>") {
		t.Fatalf("the faulted call: %d %s", code, body)
	}
	if code, body := ec2Call(t, p.URL, run); code != 200 {
		t.Fatalf("a call the fault does not match: %d %s", code, body)
	}
	spot.Set("Action", "RunInstances")
	if code, body := ec2Call(t, p.URL, spot); code != 200 {
		t.Fatalf("the fault answered more than Times calls: %d %s", code, body)
	}
	if p.Hits(f) != 1 || p.Calls("RunInstances") != 3 {
		t.Fatalf("hits %d, RunInstances calls %d; want 1 and 3", p.Hits(f), p.Calls("RunInstances"))
	}
}

// TestProxyHonoursClientTokens checks that a RunInstances whose answer was
// lost (carried out by moto, answered with an error) and that is made
// again with its client token gets moto's first answer, with no second
// instance.
func TestProxyHonoursClientTokens(t *testing.T) {
	s := Start(t)
	p := NewProxy(t, s.URL)
	p.HonourClientTokens()
	f := p.Fail(&Fault{Action: "RunInstances", Code: "InternalError", Status: 500, Times: 1, AfterMoto: true})
	run := url.Values{"Action": {"RunInstances"}, "ImageId": {"ami-12c6146b"}, "MinCount": {"1"}, "MaxCount": {"1"}, "ClientToken": {"tok-1"}}
	if code, _ := ec2Call(t, p.URL, run); code != 500 || p.Hits(f) != 1 {
		t.Fatalf("the lost answer: %d, %d hits", code, p.Hits(f))
	}
	run.Set("Action", "RunInstances")
	code, first := ec2Call(t, p.URL, run)
	run.Set("Action", "RunInstances")
	_, again := ec2Call(t, p.URL, run)
	if code != 200 || first != again || !strings.Contains(first, "<instanceId>i-") {
		t.Fatalf("the repeated token: %d %s, then %s; want one answer twice", code, first, again)
	}
	if _, body := ec2Call(t, s.URL, url.Values{"Action": {"DescribeInstances"}}); strings.Count(body, "<instanceId>") != 1 {
		t.Fatalf("moto has %d instances; want 1: %s", strings.Count(body, "<instanceId>"), body)
	}
}
