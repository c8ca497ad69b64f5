package apply

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/proposal"
)

func TestPush_SetUpstream(t *testing.T) {
	f := newFixture(t)
	bare := f.remote()
	f.git("checkout", "-q", "-b", "topic")
	f.repo.WriteCommit("topic.txt", "t\n", "topic work")
	rec := f.propose(&proposal.PushArgs{Remote: "origin", Branch: "topic", RemoteBranch: "agent/topic", SetUpstream: true})
	f.mustComplete(rec)
	if f.gitIn(bare, "rev-parse", "agent/topic") != f.git("rev-parse", "topic") {
		t.Errorf("the remote branch is not at topic")
	}
	if f.git("config", "branch.topic.remote") != "origin" || f.git("config", "branch.topic.merge") != "refs/heads/agent/topic" {
		t.Errorf("upstream not set")
	}
	if f.git("rev-parse", "topic@{upstream}") != f.git("rev-parse", "topic") {
		t.Errorf("topic@{upstream} does not resolve to the pushed commit")
	}
}

// rewrite replaces the last commit of main locally (an amend, in effect),
// so that pushing it needs a force.
func (f *fixture) rewrite() {
	f.git("reset", "-q", "--hard", "HEAD~1")
	f.repo.WriteCommit("rewritten.txt", "r\n", "rewritten history")
}

// pushedThenRewritten gives the fixture a remote that has a commit of
// main, then rewrites main locally; it returns the remote.
func (f *fixture) pushedThenRewritten() string {
	bare := f.remote()
	f.repo.WriteCommit("x.txt", "x\n", "pushed before")
	f.git("push", "-q", "origin", "main")
	f.rewrite()
	return bare
}

func TestPush_ForceWithLease_Succeeds(t *testing.T) {
	f := newFixture(t)
	bare := f.pushedThenRewritten()
	rec := f.propose(&proposal.PushArgs{Remote: "origin", Branch: "main", ForceWithLease: true})
	if _, ok := rec.Proposal.Pinned.Refs["refs/remotes/origin/main"]; !ok || !rec.Proposal.Destructive() {
		t.Fatalf("a lease push must pin the remote-tracking ref and be destructive: %+v", rec.Proposal.Pinned)
	}
	f.mustComplete(rec)
	if f.gitIn(bare, "rev-parse", "main") != f.git("rev-parse", "main") {
		t.Errorf("the remote was not overwritten")
	}
}

// TestPush_ForceWithLease_RemoteMovedRefused: someone pushed to the remote
// after the proposal was made; the lease (pinned to the SHA the proposal
// saw) refuses, and the remote keeps their work.
func TestPush_ForceWithLease_RemoteMovedRefused(t *testing.T) {
	f := newFixture(t)
	bare := f.pushedThenRewritten()
	rec := f.propose(&proposal.PushArgs{Remote: "origin", Branch: "main", ForceWithLease: true})

	other := filepath.Join(t.TempDir(), "other")
	gitxtest.Git(t, t.TempDir(), "clone", "-q", "file://"+bare, other)
	gitxtest.Git(t, other, "commit", "-q", "--allow-empty", "-m", "someone else's work")
	gitxtest.Git(t, other, "push", "-q", "origin", "main")
	theirs := gitxtest.Git(t, other, "rev-parse", "HEAD")

	out, err := f.execute(rec)
	if !errors.Is(err, ErrStaleBase) || outcomeCode(out) != errcode.StaleBase {
		t.Fatalf("code %s err %v: want stale_base", outcomeCode(out), err)
	}
	if got := f.gitIn(bare, "rev-parse", "main"); got != theirs {
		t.Errorf("the remote lost the other push: %s, want %s", got, theirs)
	}
}

func TestPush_NonFastForward_Rejected(t *testing.T) {
	f := newFixture(t)
	bare := f.pushedThenRewritten()
	rec := f.propose(&proposal.PushArgs{Remote: "origin", Branch: "main"})
	before := f.gitIn(bare, "rev-parse", "main")
	_, err := f.execute(rec)
	if errcode.Of(err) != errcode.PushRejected {
		t.Fatalf("err %v: want push_rejected", err)
	}
	if f.gitIn(bare, "rev-parse", "main") != before {
		t.Errorf("a plain push overwrote the remote")
	}
}
