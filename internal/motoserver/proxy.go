package motoserver

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"testing"
)

// Proxy stands between an AWS client and moto. It passes every request on,
// except those a Fault matches: those it answers itself, with the error
// response EC2 sends (its XML shape and HTTP status), so the SDK parses a
// genuine EC2 error. It also counts the EC2 calls by Action.
type Proxy struct {
	// URL is the proxy's base URL: the endpoint to give the client.
	URL string

	mu     sync.Mutex
	faults []*Fault
	calls  map[string]int
	params []url.Values // the form of every call, in order
	// tokens, when not nil, are RunInstances' answers by client token:
	// see HonourClientTokens.
	tokens map[string][]byte
	// before are hooks run before a call of their action is answered.
	before map[string]func()
}

// Fault answers matching EC2 calls with an error.
type Fault struct {
	// Action is the EC2 action, such as "RunInstances".
	Action string
	// Match, when set, are form parameters the call must carry with these
	// values, such as {"InstanceMarketOptions.MarketType": "spot"}.
	Match map[string]string
	// Code is the EC2 error code, such as "InsufficientInstanceCapacity".
	Code string
	// Status is the HTTP status; default 400 (EC2 answers client errors and
	// capacity with 400, throttling with 503, its own failures with 500).
	Status int
	// Times is how many calls it answers before it stops matching; 0: all.
	Times int
	// Answer, when set, is a successful answer (status 200) to give
	// instead of an error, such as an empty DescribeInstancesResponse for a
	// list EC2 has not caught up with yet.
	Answer string
	// AfterMoto passes the call on to moto first and answers the error
	// instead of moto's answer: a call that EC2 carried out but whose
	// answer was lost.
	AfterMoto bool

	hits int
}

// NewProxy serves a proxy to target (moto's URL) on a loopback port until
// the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{URL: "http://" + l.Addr().String(), calls: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := &http.Server{Handler: p.handler(rp)}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return p
}

// Fail adds a fault; the first fault that matches a call answers it.
func (p *Proxy) Fail(f *Fault) *Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append(p.faults, f)
	return f
}

// HonourClientTokens makes the proxy do what EC2 does and moto does not:
// a RunInstances with a client token it has answered before gets the
// same answer again, and launches nothing.
func (p *Proxy) HonourClientTokens() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tokens = map[string][]byte{}
}

// Before runs f before each call of action is answered (outside the
// proxy's lock, so f may wait for other calls).
func (p *Proxy) Before(action string, f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.before == nil {
		p.before = map[string]func(){}
	}
	p.before[action] = f
}

// Remove removes one fault.
func (p *Proxy) Remove(f *Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = slices.DeleteFunc(p.faults, func(g *Fault) bool { return g == f })
}

// Clear removes every fault.
func (p *Proxy) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = nil
}

// Hits is how many calls f has answered.
func (p *Proxy) Hits(f *Fault) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return f.hits
}

// Calls is how many calls of the EC2 action the proxy has seen, answered
// by a fault or passed on.
func (p *Proxy) Calls(action string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[action]
}

// Params are the forms of the calls of action seen so far, in order.
func (p *Proxy) Params(action string) []url.Values {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []url.Values
	for _, v := range p.params {
		if v.Get("Action") == action {
			out = append(out, v)
		}
	}
	return out
}

// ResetCounts forgets the calls counted so far.
func (p *Proxy) ResetCounts() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = map[string]int{}
	p.params = nil
}

func (p *Proxy) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		p.mu.Lock()
		hook := p.before[form.Get("Action")]
		p.mu.Unlock()
		if hook != nil {
			hook()
		}
		f := p.record(form)
		if f != nil && !f.AfterMoto {
			writeError(w, f)
			return
		}
		token := ""
		if form.Get("Action") == "RunInstances" {
			token = form.Get("ClientToken")
		}
		rec := httptest.NewRecorder()
		if answer := p.answered(token); answer != nil {
			rec.Header().Set("Content-Type", "text/xml;charset=UTF-8")
			_, _ = rec.Write(answer)
		} else {
			next.ServeHTTP(rec, r)
			if rec.Code == http.StatusOK {
				p.remember(token, rec.Body.Bytes())
			}
		}
		if f != nil { // moto's (or the token's) answer is lost
			writeError(w, f)
			return
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// answered is the answer to an earlier RunInstances of the client token,
// when the proxy honours tokens; nil otherwise.
func (p *Proxy) answered(token string) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tokens == nil || token == "" {
		return nil
	}
	return p.tokens[token]
}

func (p *Proxy) remember(token string, answer []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tokens != nil && token != "" {
		p.tokens[token] = answer
	}
}

// record counts the call and returns the fault that answers it, if any.
func (p *Proxy) record(form url.Values) *Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	action := form.Get("Action")
	if action == "" {
		return nil
	}
	p.calls[action]++
	p.params = append(p.params, form)
	for _, f := range p.faults {
		if f.matches(action, form) {
			f.hits++
			return f
		}
	}
	return nil
}

func (f *Fault) matches(action string, form url.Values) bool {
	if f.Action != action || (f.Times > 0 && f.hits >= f.Times) {
		return false
	}
	for k, v := range f.Match {
		if form.Get(k) != v {
			return false
		}
	}
	return true
}

// writeError answers as EC2 does: an XML Response with one Error (or the
// fault's Answer).
func writeError(w http.ResponseWriter, f *Fault) {
	if f.Answer != "" {
		w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
		_, _ = io.WriteString(w, f.Answer)
		return
	}
	status := f.Status
	if status == 0 {
		status = http.StatusBadRequest
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors><RequestID>00000000-0000-4000-8000-000000000000</RequestID></Response>`,
		html.EscapeString(f.Code), html.EscapeString("injected by the test proxy: "+f.Code))
}
