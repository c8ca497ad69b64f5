package apply

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"

	"github.com/sluicehq/sluice/core/errcode"
)

// Sluice's bookkeeping commits (a restore point's record and end state,
// the snapshot commits of index and files) are written into the
// repository's object directory by go-git, in this process: a restore
// point costs no git process per commit. They reference trees and
// commits git already wrote or knows (the empty tree), and nothing refers
// to them until the one update-ref transaction that creates the restore
// point's refs; a crash before it leaves an unreferenced object, which is
// what git itself leaves. Repositories whose objects are not SHA-1 go
// through git commit-tree, which go-git cannot hash for, and so do
// repositories shared between accounts (core.sharedRepository: git gives
// the object directories group permissions go-git does not) or keeping
// objects in a second format (extensions.compatObjectFormat).

// sluiceSig is the identity of the bookkeeping commits, as in
// sluiceIdentity.
func sluiceSig(now time.Time) object.Signature {
	return object.Signature{Name: "Sluice", Email: "sluice@localhost", When: now}
}

// commitTree makes one of Sluice's own bookkeeping commits: Sluice's
// identity, never signed, written in process when the repository's
// objects are SHA-1.
func (rc *repoCtx) commitTree(ctx context.Context, tree string, parents []string, msg string) (string, error) {
	if rc.inProcessObjects() {
		id, err := rc.writeCommit(tree, parents, msg)
		if err == nil {
			return id, nil
		}
		// git reports the same failure better, or succeeds where go-git
		// could not (an object directory it cannot write to the same way).
		if rc.e != nil {
			rc.e.log.Debug("apply: writing a bookkeeping commit in process failed; using git", "err", err)
		}
	}
	return rc.g.commitTree(ctx, rc.path, tree, parents, msg)
}

// emptyTree returns the id of the empty tree, which the records of a
// restore point use, after making sure it is in the object directory:
// git knows the empty tree without it, but git fsck reports a commit
// whose tree is not stored as broken.
func (rc *repoCtx) emptyTree(ctx context.Context) (string, error) {
	id := emptyTree(rc.repo)
	if rc.store.emptyTreeStored {
		return id, nil
	}
	var err error
	inProcess := rc.inProcessObjects()
	if inProcess {
		obj := rc.objectStorage().NewEncodedObject()
		obj.SetType(plumbing.TreeObject)
		var h plumbing.Hash
		if h, err = rc.store.objects.SetEncodedObject(obj); err == nil && h.String() != id {
			err = fmt.Errorf("the empty tree hashed to %s", h)
		}
	}
	if err != nil || !inProcess {
		var res result
		if res, err = rc.g.run(ctx, call{dir: rc.path, args: []string{"mktree"}, stdin: []byte{}}); err != nil {
			return "", err
		}
		if res.text() != id {
			return "", errcode.New(errcode.GitFailed, "git mktree gave %q for the empty tree", res.text())
		}
	}
	rc.store.emptyTreeStored = true
	return id, nil
}

// inProcessObjects reports whether go-git may write the repository's
// objects (see the top of this file).
func (rc *repoCtx) inProcessObjects() bool {
	if f := rc.repo.ObjectFormat; f != "" && f != "sha1" {
		return false
	}
	if _, ok := rc.repo.Config("extensions.compatObjectFormat"); ok {
		return false
	}
	switch v, _ := rc.repo.Config("core.sharedRepository"); strings.ToLower(v) {
	case "", "false", "umask", "0", "no", "off":
		return true
	}
	return false
}

// objectStore writes one repository's bookkeeping commits in process.
type objectStore struct {
	// objects is nil until the first write.
	objects *filesystem.ObjectStorage
	// emptyTreeStored: the empty tree is in the object directory.
	emptyTreeStored bool
}

func (rc *repoCtx) objectStorage() *filesystem.ObjectStorage {
	if rc.store.objects == nil {
		rc.store.objects = filesystem.NewObjectStorage(dotgit.New(osfs.New(rc.repo.CommonDir)), cache.NewObjectLRU(64*cache.KiByte))
	}
	return rc.store.objects
}

// keptCommit is a commit of Sluice's that only keeps objects (a sealed
// outcome's, or the fold of them under refs/sluice/kept): dated as the
// folded restore points are (foldedEpoch), so that the person's `git log
// --all` shows it last rather than first; written in process where
// commitTree would write it, else by git.
func (rc *repoCtx) keptCommit(ctx context.Context, tree string, parents []string, msg string) (string, error) {
	if rc.inProcessObjects() {
		if id, err := rc.writeCommitAt(tree, parents, msg, time.Unix(1, 0).UTC()); err == nil {
			return id, nil
		}
	}
	return rc.epochCommit(ctx, tree, parents, msg)
}

// writeCommit writes the commit object with go-git and returns its id.
func (rc *repoCtx) writeCommit(tree string, parents []string, msg string) (string, error) {
	now := time.Now()
	if rc.e != nil {
		now = rc.e.now()
	}
	return rc.writeCommitAt(tree, parents, msg, now)
}

// writeCommitAt is writeCommit dated now.
func (rc *repoCtx) writeCommitAt(tree string, parents []string, msg string, now time.Time) (string, error) {
	if !hexSHA.MatchString(tree) || len(tree) != 40 {
		return "", fmt.Errorf("not a SHA-1 tree id: %q", tree)
	}
	c := &object.Commit{TreeHash: plumbing.NewHash(tree), Message: msg + "\n"}
	for _, p := range parents {
		if !hexSHA.MatchString(p) || len(p) != 40 {
			return "", fmt.Errorf("not a SHA-1 commit id: %q", p)
		}
		c.ParentHashes = append(c.ParentHashes, plumbing.NewHash(p))
	}
	c.Author, c.Committer = sluiceSig(now), sluiceSig(now)
	obj := rc.objectStorage().NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return "", err
	}
	h, err := rc.store.objects.SetEncodedObject(obj)
	if err != nil {
		return "", err
	}
	return strings.ToLower(h.String()), nil
}
