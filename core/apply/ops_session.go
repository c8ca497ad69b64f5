package apply

import (
	"context"
	"os"

	"github.com/sluicehq/sluice/core/apply/seal"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// Commits from a confined session. The session's agent never wrote the
// person's files: it worked in a private copy. So a commit it proposes
// takes its content from the copy (every file the agent changed there
// since the copy was made, or those of them at the named paths), lands on
// the person's branch as any approved commit does, with their git, and
// then brings their checkout along: each committed file that the person
// had not touched is written with the committed content (a deleted one
// removed), so their checkout shows the commit instead of its reverse. A
// file the person has work in stays as it is, and the card says so
// (Sealed.Keeps); every file the executor will write is on the card
// (Sealed.Checkout) and must still be untouched when it runs, or nothing
// runs. A file of the person's that git does not track (untracked or
// ignored) where the commit would write refuses the proposal: Sluice
// never overwrites or deletes one. The checkout is planned in
// session_checkout.go.

// SessionCopies finds a confined session's private copy.
type SessionCopies interface {
	// Copy is session id's copy (its working tree) and the commit it was
	// made at.
	Copy(id string) (dir, base string, err error)
}

// sessionSource is a session's copy, as a commit's source of content
// (which core/apply/seal reads).
type sessionSource struct {
	dir, base string
}

// sessionSource is the copy of the session p came from; nil for a
// proposal from outside any session.
func (r *run) sessionSource() (*sessionSource, error) {
	o := r.p.Origin
	if o == nil {
		return nil, nil
	}
	if r.e.sessions == nil {
		return nil, errcode.New(errcode.Unsupported, "this Sluice app cannot read confined sessions' copies")
	}
	dir, base, err := r.e.sessions.Copy(o.Session)
	if err != nil {
		return nil, errcode.Wrap(errcode.NotFound, err, "the confined session's copy is gone, so the content of its commit cannot be read: %v", err)
	}
	return &sessionSource{dir: dir, base: base}, nil
}

// SessionLeftover lists what the agent of a confined session changed in
// its copy (at copyDir, made at base from the repository repo) and never
// proposed with the content it has now (see seal.Leftover). Nothing is
// written to the person's repository: the copy's files are hashed into a
// scratch object directory.
func (e *Executor) SessionLeftover(ctx context.Context, repo, copyDir, base string, proposed []*proposal.Sealed) ([]string, error) {
	rc, err := e.openRepo(ctx, repo)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "sluice-leftover-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	sl := seal.New(rc.g.git, tmp)
	if err := sl.Scratch(); err != nil {
		return nil, err
	}
	return seal.Leftover(ctx, sl, copyDir, base, proposed)
}
