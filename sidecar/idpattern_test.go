package sidecar

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/proposal"
)

// Every tool that takes a proposal id tells the client its form in the
// input schema; the pattern a client checks and the validator the gateway,
// the journal and the app check must accept and refuse the same ids.
func TestToolSchemas_ProposalIDPatternIsTheValidator(t *testing.T) {
	ids := []string{
		"a", "A", "0", "_", "-", "p-01J9ZK3Q4W5E6R7T8Y9U0I1O2P", "ws_release-1", strings.Repeat("x", 128),
		"", strings.Repeat("x", 129), "a.b", "a/b", "../x", "a b", "a\n", "\na", "é", "a:b", "a$", "^a",
	}
	found := 0
	for _, lt := range allTools(t) {
		raw, err := json.Marshal(lt.Tool.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var schema struct {
			Properties map[string]struct {
				Pattern string `json:"pattern"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(raw, &schema); err != nil {
			t.Fatal(err)
		}
		p, ok := schema.Properties["proposalId"]
		if !ok {
			continue
		}
		found++
		if p.Pattern == "" {
			t.Errorf("%s: proposalId has no pattern", lt.Tool.Name)
			continue
		}
		re, err := regexp.Compile(p.Pattern)
		if err != nil {
			t.Fatalf("%s: proposalId pattern %q: %v", lt.Tool.Name, p.Pattern, err)
		}
		for _, id := range ids {
			if re.MatchString(id) != proposal.ValidID(id) {
				t.Errorf("%s: id %q: schema pattern says %v, proposal.ValidID says %v", lt.Tool.Name, id, re.MatchString(id), proposal.ValidID(id))
			}
		}
	}
	if found == 0 {
		t.Fatal("no tool takes a proposalId")
	}
}
