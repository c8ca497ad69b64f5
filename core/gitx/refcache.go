package gitx

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// refCacheRacy is how old every stamped file must be for a reading of the
// refs to be kept: a ref rewritten within the file system's timestamp
// granularity of the reading could leave the same stamps behind.
const refCacheRacy = time.Second

// refNamesCache keeps, per common git directory, what readRefs read with
// the stamps of the files they came from: packed-refs, the reftable
// list, and every directory and loose ref under refs/heads, refs/tags and
// refs/remotes. git writes a ref by renaming a lock file over it, which
// moves its directory's mtime, and rewrites packed-refs by a rename too; a
// reading is reused while every stamp is the same, so decorating a commit
// reads a few directories instead of starting a process that lists the
// refs.
type refNamesCache struct {
	mu sync.Mutex
	m  map[string]refNamesEntry
	// reading holds, per common git directory, the lock of the one
	// reading at a time: calls that miss together (a brief's refs and
	// its log's names) wait for one for-each-ref instead of starting two.
	reading map[string]*sync.Mutex
}

type refNamesEntry struct {
	stamps  []refStamp
	reading *refReading
}

// refStamp is a file's or directory's state: for a directory its mtime
// moves with every entry created, renamed over or removed in it.
type refStamp struct {
	path  string
	size  int64
	mtime time.Time
	id    any
	// ref is the name of the loose ref the file holds, for a file under
	// refs/.
	ref string
}

// refStamps stamps the files the names under commonDir are read from, in
// a fixed order. racy reports a stamp younger than refCacheRacy at start.
func refStamps(commonDir string, start time.Time) (stamps []refStamp, racy bool) {
	add := func(p string, st fs.FileInfo) {
		s := refStamp{path: p}
		if st != nil {
			s.size, s.mtime, s.id = st.Size(), st.ModTime(), fileID(st)
			if st.IsDir() {
				s.size = -1
			}
			racy = racy || !s.mtime.Before(start.Add(-refCacheRacy))
		}
		stamps = append(stamps, s)
	}
	for _, f := range []string{"packed-refs", filepath.Join("reftable", "tables.list")} {
		p := filepath.Join(commonDir, f)
		st, _ := os.Lstat(p)
		add(p, st)
	}
	var walk func(dir string)
	walk = func(dir string) {
		st, err := os.Lstat(dir)
		if err != nil || !st.IsDir() {
			add(dir, nil)
			return
		}
		add(dir, st)
		entries, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			if e.IsDir() {
				walk(p)
				continue
			}
			if st, err := e.Info(); err == nil {
				add(p, st)
			} else {
				add(p, nil)
			}
			if rel, err := filepath.Rel(commonDir, p); err == nil {
				stamps[len(stamps)-1].ref = filepath.ToSlash(rel)
			}
		}
	}
	for _, ns := range decoratedNamespaces {
		walk(filepath.Join(commonDir, filepath.FromSlash(ns)))
	}
	return stamps, racy
}

func sameRefStamps(a, b []refStamp) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].path != b[i].path || a[i].size != b[i].size || !a[i].mtime.Equal(b[i].mtime) || a[i].id != b[i].id {
			return false
		}
	}
	return true
}

// cachedRefNames is the names of readRefs, read once per state of the
// ref files. The map it returns is shared: callers do not change it.
func (repo *Repo) cachedRefNames(ctx context.Context) (map[string][]string, error) {
	rr, err := repo.cachedRefs(ctx)
	if err != nil {
		return nil, err
	}
	return rr.names, nil
}

// cachedRefs is readRefs(ctx) read once per state of the ref files. The
// reading it returns is shared: callers do not change it.
func (repo *Repo) cachedRefs(ctx context.Context) (*refReading, error) {
	c := &repo.r.refNames
	stamps, racy := refStamps(repo.CommonDir, time.Now())
	c.mu.Lock()
	e, ok := c.m[repo.CommonDir]
	c.mu.Unlock()
	if ok && sameRefStamps(e.stamps, stamps) {
		return e.reading, nil
	}
	c.mu.Lock()
	if c.reading == nil {
		c.reading = map[string]*sync.Mutex{}
	}
	one := c.reading[repo.CommonDir]
	if one == nil {
		one = &sync.Mutex{}
		c.reading[repo.CommonDir] = one
	}
	c.mu.Unlock()
	one.Lock()
	defer one.Unlock()
	// A reading kept while this call waited, of the files as this call
	// stamped them, is this call's answer too.
	c.mu.Lock()
	e, ok = c.m[repo.CommonDir]
	c.mu.Unlock()
	if ok && sameRefStamps(e.stamps, stamps) {
		return e.reading, nil
	}
	// The stamps are taken before the refs are read: a ref written in
	// between is in the reading and moves a stamp, so the next call reads
	// again.
	rr, err := repo.readRefs(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if racy || !rr.exact(stamps) {
		delete(c.m, repo.CommonDir)
	} else {
		if c.m == nil {
			c.m = map[string]refNamesEntry{}
		}
		c.m[repo.CommonDir] = refNamesEntry{stamps: stamps, reading: rr}
	}
	c.mu.Unlock()
	return rr, nil
}

// exact reports whether a reading can be kept while the stamps taken
// before it stay the same: every loose ref file stamped is a ref it
// lists (a file for-each-ref passes over, such as a symbolic ref whose
// target is missing, could start to count without a stamped file
// changing), and no symbolic ref it lists points outside
// decoratedNamespaces (what that names can change the same way).
func (rr *refReading) exact(stamps []refStamp) bool {
	listed := make(map[string]bool, len(rr.refs))
	for _, r := range rr.refs {
		if r.symref != "" && !inDecoratedNamespaces(r.symref) {
			return false
		}
		listed[r.name] = true
	}
	for _, s := range stamps {
		if s.ref != "" && !listed[s.ref] {
			return false
		}
	}
	return true
}

func inDecoratedNamespaces(ref string) bool {
	for _, ns := range decoratedNamespaces {
		if strings.HasPrefix(ref, ns+"/") {
			return true
		}
	}
	return false
}
