package proposal

import (
	"encoding/json"
	"strings"
	"testing"
)

// The origin is covered by the digest: a card that says "confined" is
// bound to it, and a proposal whose origin changed no longer verifies. It
// survives the JSON round trip the journal makes.
func TestOrigin_CoveredByDigest(t *testing.T) {
	p := sample(t, sampleArgs()[OpCommit])
	p.Origin = &Origin{Session: "6b794f9503a38fe7", Runtime: "bubblewrap", Network: []string{"api.anthropic.com", "127.0.0.1:4000"}}
	if err := p.Seal(); err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back Proposal
	if err := json.Unmarshal(b, &back); err != nil || back.Validate() != nil || back.Origin == nil || back.Origin.Session != p.Origin.Session {
		t.Fatalf("round trip: %v %+v", err, back.Origin)
	}
	for _, change := range []func(*Proposal){
		func(p *Proposal) { p.Origin = nil },
		func(p *Proposal) { p.Origin.Network = []string{"api.anthropic.com", "evil.example"} },
		func(p *Proposal) { p.Origin.Runtime = "runsc" },
		func(p *Proposal) { p.Origin.Leftover = true },
	} {
		q := back
		o := *back.Origin
		q.Origin = &o
		change(&q)
		if err := q.Validate(); err == nil {
			t.Errorf("a changed origin still verifies: %+v", q.Origin)
		}
	}
}

func TestOrigin_Validate_Refuses(t *testing.T) {
	for _, o := range []Origin{
		{Session: "", Runtime: "bubblewrap"},
		{Session: "../x", Runtime: "bubblewrap"},
		{Session: "s1", Runtime: "Bubble Wrap"},
		{Session: "s1", Runtime: "bubblewrap", Network: []string{"host with space"}},
		{Session: "s1", Runtime: "bubblewrap", Network: make([]string, MaxOriginHosts+1)},
	} {
		p := sample(t, sampleArgs()[OpCommit])
		p.Origin = &o
		if err := p.Seal(); err != nil {
			t.Fatal(err)
		}
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "origin") {
			t.Errorf("origin %+v: %v, want it refused", o, err)
		}
	}
}

// What a card says: the session, its sandbox and its network; or, for an
// agent Sluice did not start, that it could write without asking.
func TestOrigin_Describe(t *testing.T) {
	var none *Origin
	if got := none.Describe(); got != "runs as your account: it could write to the repository without asking" {
		t.Errorf("unconfined: %q", got)
	}
	o := &Origin{Session: "6b794f9503a38fe7", Runtime: "bubblewrap", Network: []string{"api.anthropic.com"}}
	if got := o.Describe(); got != "confined session (bubblewrap; network: api.anthropic.com), session 6b794f95" {
		t.Errorf("confined: %q", got)
	}
	o.Network, o.Leftover = nil, true
	if got := o.Describe(); got != "confined session (bubblewrap; network: none), session 6b794f95: changes it left and never proposed" {
		t.Errorf("leftover: %q", got)
	}
}
