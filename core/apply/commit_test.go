//go:build unix

package apply

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/proposal"
)

// hook installs one of the person's hooks in the fixture's repository.
func (f *fixture) hook(name, script string) {
	f.t.Helper()
	p := filepath.Join(f.repo.Dir, ".git", "hooks", name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		f.t.Fatal(err)
	}
}

func TestCommit_PreCommitHookFails_FailedWithOutput(t *testing.T) {
	f := newFixture(t)
	f.hook("pre-commit", `echo "lint: src/a.txt has trailing whitespace" >&2; echo "fix it first"; exit 1`)
	f.repo.Write("src/a.txt", "changed \n")
	f.repo.Write("src/new.txt", "new\n")
	before := repoState(t, f.repo.Dir)
	rec := f.propose(&proposal.CommitArgs{Message: "Change a", Paths: []string{"src/a.txt", "src/new.txt"}})
	out, err := f.execute(rec)
	if !errors.Is(err, ErrHookFailed) || out.State != proposal.Failed || outcomeCode(out) != errcode.HookFailed {
		t.Fatalf("state %s code %s err %v: want failed with hook_failed", out.State, outcomeCode(out), err)
	}
	for _, want := range []string{"lint: src/a.txt has trailing whitespace", "fix it first"} {
		if !strings.Contains(out.Outcome.Message, want) {
			t.Errorf("outcome message %q lacks the hook's output %q", out.Outcome.Message, want)
		}
	}
	if after := repoState(t, f.repo.Dir); after != before {
		t.Errorf("a refused commit left changes behind:\n%s", diffState(before, after))
	}
	if out.Outcome.RestorePoint != "" {
		t.Errorf("nothing changed, yet restore point %q was kept", out.Outcome.RestorePoint)
	}
}

func TestCommit_CommitMsgHookHonoured(t *testing.T) {
	f := newFixture(t)
	f.hook("commit-msg", `printf '\nReviewed-by: the person'"'"'s hook\n' >> "$1"`)
	f.hook("pre-commit", `touch pre-commit-ran`)
	f.repo.Write("src/a.txt", "changed\n")
	rec := f.propose(&proposal.CommitArgs{Message: "Change a", StageAll: true})
	f.mustComplete(rec)
	msg := f.git("log", "-1", "--format=%B")
	if !strings.Contains(msg, "Reviewed-by: the person's hook") || !strings.Contains(msg, "Sluice-Proposal: "+rec.Proposal.ID) {
		t.Errorf("message %q: want the hook's line and the trailers", msg)
	}
	if _, err := os.Stat(filepath.Join(f.repo.Dir, "pre-commit-ran")); err != nil {
		t.Errorf("pre-commit did not run: %v", err)
	}
}

// TestCommit_Signing_Honoured signs with an ssh key, the way a person
// configures signing: the approved commit and a computed merge commit
// both carry a signature that verifies.
func TestCommit_Signing_Honoured(t *testing.T) {
	keygen := needTool(t, "ssh-keygen")
	f := newFixture(t)
	key := filepath.Join(t.TempDir(), "id_ed25519")
	if out, err := exec.Command(keygen, "-q", "-t", "ed25519", "-N", "", "-C", "pat@example.com", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	signers := filepath.Join(t.TempDir(), "allowed_signers")
	if err := os.WriteFile(signers, []byte("pat@example.com "+string(pub)), 0o600); err != nil {
		t.Fatal(err)
	}
	f.git("config", "gpg.format", "ssh")
	f.git("config", "user.signingkey", key)
	f.git("config", "commit.gpgsign", "true")
	f.git("config", "gpg.ssh.allowedSignersFile", signers)
	f.diverge()
	f.repo.Write("src/c.txt", "signed change\n")

	rec := f.propose(&proposal.CommitArgs{Message: "Signed change", Paths: []string{"src/c.txt"}})
	f.mustComplete(rec)
	if obj := f.git("cat-file", "commit", "HEAD"); !strings.Contains(obj, "gpgsig -----BEGIN SSH SIGNATURE-----") {
		t.Fatalf("the commit is not signed:\n%s", obj)
	}
	if _, err := gitxtest.GitErr(t, f.repo.Dir, "verify-commit", "HEAD"); err != nil {
		t.Errorf("the signature does not verify: %v", err)
	}

	f.git("branch", "release", "main")
	merge := f.propose(&proposal.MergeArgs{Source: "feature", Target: "release", Strategy: proposal.MergeCommit})
	f.mustComplete(merge)
	if obj := f.git("cat-file", "commit", "release"); !strings.Contains(obj, "gpgsig ") {
		t.Errorf("the merge commit is not signed:\n%s", obj)
	}
}

func TestCommit_NothingToCommit(t *testing.T) {
	f := newFixture(t)
	// An empty commit is refused when it is proposed, before any card.
	f.refuseAtSeal(&proposal.CommitArgs{Message: "Nothing", StageAll: true}, &errcode.Error{Code: errcode.NothingToCommit})
	f.refuseAtSeal(&proposal.CommitArgs{Message: "Nothing", Paths: []string{"src/a.txt"}}, &errcode.Error{Code: errcode.NothingToCommit})
}

// TestCommit_MidMerge_Refused: a commit while a merge is in progress would
// conclude that merge; it is refused.
func TestCommit_MidMerge_Refused(t *testing.T) {
	f := newFixture(t)
	f.git("checkout", "-q", "-b", "feature")
	f.repo.WriteCommit("src/a.txt", "feature\n", "feature")
	f.git("checkout", "-q", "main")
	f.repo.WriteCommit("src/a.txt", "main\n", "main")
	if _, err := gitxtest.GitErr(t, f.repo.Dir, "merge", "feature"); err == nil {
		t.Fatal("the fixture merge did not conflict")
	}
	f.repo.Write("src/b.txt", "changed while merging\n")
	rec := f.propose(&proposal.CommitArgs{Message: "x", Paths: []string{"src/b.txt"}})
	if _, err := f.execute(rec); errcode.Of(err) != errcode.OperationInProgress {
		t.Fatalf("err %v: want operation_in_progress", err)
	}
}
