package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/core/audit"
	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/policy"
)

// A rule is created by the person, in Sluice (rule_created, with its
// source). The policy file is also theirs to edit by hand, and Sluice
// cannot tell their hand from anything else that writes the file; what it
// can do is never take a change of the file silently. The digest and the
// rules of the file as Sluice last applied it are kept in the state
// directory (Sluice's own, which no proposal may write); whenever the app
// reads the file and finds it different, the change is audited
// (policy_file_changed, source "file") with the new digest and the rules
// that appeared or went, before the file is applied.

// policySeen is the policy file as Sluice last applied it.
type policySeen struct {
	Path   string   `json:"path"`
	Digest string   `json:"digest"`
	Rules  []string `json:"rules"`
}

func policySeenFile(cfg *config.Config) string {
	return filepath.Join(cfg.StateDir, "policy-seen.json")
}

func readPolicySeen(cfg *config.Config) (policySeen, error) {
	var s policySeen
	b, err := os.ReadFile(policySeenFile(cfg))
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		// A record Sluice cannot read is as good as none: the next look
		// audits the file as it is.
		return policySeen{}, nil
	}
	return s, nil
}

func writePolicySeen(cfg *config.Config, s policySeen) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return config.WriteFileAtomic(policySeenFile(cfg), append(b, '\n'), 0o600)
}

// notePolicyFile audits f when it is not the file Sluice last applied,
// then records it as seen. event names the moment ("policy_loaded" at
// start-up, "policy_file_changed" when the running app finds it edited).
// Nothing is applied when the ledger cannot be written.
func notePolicyFile(cfg *config.Config, ledger *audit.Ledger, f *policy.File, event string) error {
	seen, err := readPolicySeen(cfg)
	if err != nil {
		return err
	}
	now := policySeen{Path: f.Path, Digest: f.Digest(), Rules: f.Policy.RuleKeys()}
	if seen.Path == now.Path && seen.Digest == now.Digest {
		return nil
	}
	added := difference(now.Rules, seen.Rules)
	removed := difference(seen.Rules, now.Rules)
	summary := "the policy file " + f.Path + " is not as Sluice last applied it"
	if seen.Digest == "" {
		summary = "the policy file " + f.Path + " is applied for the first time"
	}
	if len(added) > 0 {
		summary += fmt.Sprintf("; %d rule(s) appeared in it without being created in Sluice: %s (review them on the Rules screen)", len(added), strings.Join(added, ", "))
	}
	data := map[string]any{"source": "file", "path": f.Path, "digest": now.Digest, "previousDigest": seen.Digest,
		"rulesAdded": strings.Join(added, ","), "rulesRemoved": strings.Join(removed, ","), "rules": int64(len(now.Rules))}
	if _, err := ledger.Append(audit.Entry{EventType: event, Result: "ok", Approval: "file", Summary: summary, Data: data}); err != nil {
		return &errcode.Error{Code: errcode.AuditFailed, Msg: "the policy file changed and the change could not be audited, so it was not applied: " + err.Error()}
	}
	return writePolicySeen(cfg, now)
}

// seenPolicySaved records f, just saved by Sluice itself (its change is
// audited as rule_created or rule_revoked), as seen.
func seenPolicySaved(cfg *config.Config, f *policy.File) error {
	return writePolicySeen(cfg, policySeen{Path: f.Path, Digest: f.Digest(), Rules: f.Policy.RuleKeys()})
}

func difference(a, b []string) []string {
	out := []string{}
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}
