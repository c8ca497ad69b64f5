//go:build unix

package intake

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// TestSubmit_OwnPlaces_Refused: a proposal that would change Sluice's own
// configuration is refused whatever its operation (a commit naming the
// file, a patch, a merge whose sealed outcome alone writes it) and however
// the place is spelled (the config directory is configured through a
// symlink here); nothing is stored and nothing is left in the repository.
func TestSubmit_OwnPlaces_Refused(t *testing.T) {
	s := newSealEnv(t)
	// The person keeps the policy file and Sluice's config directory in
	// the repository; the config directory is known by a symlink.
	if err := os.MkdirAll(filepath.Join(s.repo.Dir, "ops", "sluice"), 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "cfg")
	if err := os.Symlink(filepath.Join(s.repo.Dir, "ops", "sluice"), link); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{ConfigDir: link, StateDir: filepath.Join(t.TempDir(), "state"), PolicyFile: filepath.Join(s.repo.Dir, "policy.json")}
	s.b.opts.OwnPlaces = cfg.OwnPlaces()

	s.repo.WriteCommit("policy.json", `{"version": 1, "rules": []}`+"\n", "policy")
	s.repo.Git("checkout", "-q", "-b", "feature")
	s.repo.WriteCommit("policy.json", `{"version": 1, "rules": [{"agent": "agent-a"}]}`+"\n", "trust me")
	s.repo.Git("checkout", "-q", "main")
	s.repo.WriteCommit("b.txt", "b\n", "other")

	s.repo.Write("policy.json", `{"version": 1, "rules": [{"agent": "agent-a"}]}`+"\n")
	s.repo.Write("ops/sluice/config.json", `{"allowedRoots": ["/"]}`+"\n")
	cases := []struct {
		name string
		args proposal.Args
		path string
	}{
		{"commit of the policy file", &proposal.CommitArgs{Message: "m", Paths: []string{"policy.json"}}, "policy.json"},
		{"commit of config.json through the symlinked config directory", &proposal.CommitArgs{Message: "m", Paths: []string{"ops/sluice/config.json"}}, "ops/sluice/config.json"},
		{"merge whose outcome writes the policy file", &proposal.MergeArgs{Source: "feature", Target: "main", Strategy: proposal.MergeCommit}, "policy.json"},
	}
	for _, c := range cases {
		p := sealedProposal(t, s.repo.Dir, c.args)
		_, err := s.client.SubmitProposal(context.Background(), "agent-a", p)
		var api *gateway.APIError
		if !errors.As(err, &api) || api.Detail.Code != errcode.PolicyDenied {
			t.Errorf("%s: %v, want policy_denied", c.name, err)
			continue
		}
		if !strings.Contains(api.Detail.Message, c.path) || !strings.Contains(api.Detail.Message, "Sluice's own configuration") || !strings.Contains(api.Detail.Message, "Settings or with the CLI") {
			t.Errorf("%s: the message does not name the path and why: %q", c.name, api.Detail.Message)
		}
		if _, err := s.j.Get(p.ID); !errors.Is(err, journal.ErrNotFound) {
			t.Errorf("%s: the refused proposal was stored: %v", c.name, err)
		}
	}
	if refs := s.repo.Git("for-each-ref", proposal.SealedRefPrefix); refs != "" {
		t.Errorf("refused proposals left refs: %q", refs)
	}
	// Another file of the same repository is an ordinary proposal.
	s.repo.Write("a.txt", "two\n")
	p := sealedProposal(t, s.repo.Dir, &proposal.CommitArgs{Message: "m", Paths: []string{"a.txt"}})
	if _, err := s.client.SubmitProposal(context.Background(), "agent-a", p); err != nil {
		t.Fatalf("an ordinary commit: %v", err)
	}
}
