package gitx

import (
	"bytes"
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
)

// The brief's recent commits are git log --max-count=50 HEAD: a process
// beside the status that the brief waits for at every size of repository.
// logLocal walks them in this process where git's answer is certain, and
// leaves every other case to git (ErrNotLocal): HEAD as ResolveLocal reads
// it; SHA-1 objects in this object directory alone (no alternates), loose
// or in packs whose indexes are within maxLocalIndex; no shallow file;
// every commit as parseLocalCommit reads it. The order is git's for a log
// without options: the newest commit date first, a commit after those of
// the same date already waiting, each commit once. An abbreviated id is
// its first 12 digits where no other object shares them (git lengthens
// it otherwise, and then git answers).
//
// TestBriefLog_LocalSameAsGit holds the answers to git's.

// briefLog is the brief's log of n commits from HEAD.
func (repo *Repo) briefLog(ctx context.Context, n int) ([]Commit, error) {
	return repo.briefLogNamed(ctx, n, nil)
}

// briefLogNamed is briefLog with the ref names already read (cachedRefs'
// names), or nil to read them.
func (repo *Repo) briefLogNamed(ctx context.Context, n int, names map[string][]string) ([]Commit, error) {
	if commits, full, err := repo.logLocal(n); err == nil {
		if len(commits) > 0 {
			if names == nil {
				var err error
				if names, err = repo.cachedRefNames(ctx); err != nil {
					return nil, err
				}
			}
			for i := range commits {
				commits[i].Refs = slices.Clone(names[full[i]])
			}
		}
		return commits, nil
	}
	return repo.logCommits(ctx, logOpts{opts: []string{"--max-count=" + strconv.Itoa(n)}, revs: []string{"HEAD"}})
}

// logLocal is `git log --max-count=n HEAD` in logFormat with
// --abbrev=12, read in this process: the commits as parseLog reads them,
// and their full ids.
func (repo *Repo) logLocal(n int) ([]Commit, []string, error) {
	if f := repo.ObjectFormat; f != "" && f != "sha1" {
		return nil, nil, ErrNotLocal
	}
	if _, ok := repo.Config("extensions.refstorage"); ok {
		return nil, nil, ErrNotLocal
	}
	for _, p := range []string{filepath.Join(repo.CommonDir, "reftable"), filepath.Join(repo.CommonDir, "shallow"),
		filepath.Join(repo.CommonDir, "objects", "info", "alternates")} {
		if !absent(p) {
			return nil, nil, ErrNotLocal
		}
	}
	so := repo.objects()
	defer so.mu.Unlock()
	objs := so.objs
	refs := &refFiles{gitDir: repo.GitDir, commonDir: repo.CommonDir, objs: objs}
	head, _, err := refs.ref("HEAD", true)
	if err != nil {
		return nil, nil, ErrNotLocal
	}
	if commits, full, ok := repo.logMemo.get(head, n, so.stamp); ok {
		return commits, full, nil
	}
	// The stamps are taken before what they stand for is read (the pack
	// directory's when so listed it, the others by the abbreviator): an
	// object written in between moves one, and the next call walks again.
	start := time.Now()
	read := func(id string) (*walkCommit, error) {
		raw, err := objs.Full(plumbing.NewHash(id), plumbing.CommitObject, maxLocalBlob)
		if err != nil {
			return nil, ErrNotLocal
		}
		c, ok := parseLocalCommit(raw, repo.r.version)
		if !ok {
			return nil, ErrNotLocal
		}
		return &walkCommit{id: id, c: c, date: c.committer.secs}, nil
	}
	first, err := read(head)
	if err != nil {
		return nil, nil, err
	}
	seen := map[string]bool{head: true}
	queue := []*walkCommit{first}
	abbrevs := &abbreviator{objs: objs, loose: map[string][]string{}}
	var commits []Commit
	var full []string
	for len(queue) > 0 && len(commits) < n {
		w := queue[0]
		queue = queue[1:]
		short, err := abbrevs.abbrev(w.id)
		if err != nil {
			return nil, nil, err
		}
		commits = append(commits, Commit{SHA: short, Merge: len(w.c.parents) > 1, Author: w.c.author.name,
			Date: w.c.author.date, Subject: clip(subjectOf(w.c.message), 200)})
		full = append(full, w.id)
		for _, p := range w.c.parents {
			if seen[p] {
				continue
			}
			seen[p] = true
			pc, err := read(p)
			if err != nil {
				return nil, nil, err
			}
			// Before the first waiting commit of an older date.
			i := sort.Search(len(queue), func(i int) bool { return queue[i].date < pc.date })
			queue = append(queue[:i], append([]*walkCommit{pc}, queue[i:]...)...)
		}
	}
	if commits == nil {
		commits = []Commit{}
	}
	repo.logMemo.put(head, n, commits, full, so.stamp, abbrevs.stamps, start)
	return commits, full, nil
}

// logMemo is a Repo's last walk of logLocal: the commits and full ids of
// n commits from HEAD, kept while HEAD names the same commit and every
// directory whose entries decided an abbreviation is as it was. A
// commit's id names its content, so what the walk read cannot change
// under the same HEAD (replace objects and grafts count for neither this
// walk nor the read profile's git); only a new object sharing 12 digits
// with one of the ids could change an answer, and it lands in a stamped
// directory (the pack directory, the object directory when it makes a
// new fan-out directory, or the fan-out directory it shares with that
// id). A shallow file, alternates or a reftable are looked for at every
// call, before the memo.
type logMemo struct {
	mu      sync.Mutex
	head    string
	n       int
	commits []Commit
	full    []string
	pack    refStamp
	stamps  []refStamp
	// walks counts the walks made (tests).
	walks int
}

// get returns a copy of the memo's commits when it answers n commits from
// head with the pack directory as stamped and every other stamped
// directory unchanged.
func (m *logMemo) get(head string, n int, pack refStamp) ([]Commit, []string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.head != head || m.n != n || m.commits == nil || !sameRefStamps([]refStamp{m.pack}, []refStamp{pack}) {
		return nil, nil, false
	}
	for _, s := range m.stamps {
		if !sameRefStamps([]refStamp{s}, []refStamp{dirStamp(s.path)}) {
			return nil, nil, false
		}
	}
	return slices.Clone(m.commits), m.full, true
}

// put keeps a walk unless a stamp is within the racy window of start: a
// directory changed twice within its timestamp granularity could look
// unchanged.
func (m *logMemo) put(head string, n int, commits []Commit, full []string, pack refStamp, stamps []refStamp, start time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.walks++
	for _, s := range append([]refStamp{pack}, stamps...) {
		if !s.mtime.Before(start.Add(-refCacheRacy)) {
			m.commits = nil
			return
		}
	}
	m.head, m.n, m.commits, m.full, m.pack, m.stamps = head, n, slices.Clone(commits), full, pack, stamps
}

// dirStamp is a directory's state as refStamps records one; an absent
// directory has the zero state.
func dirStamp(p string) refStamp {
	s := refStamp{path: p}
	if st, err := os.Lstat(p); err == nil {
		s.size, s.mtime, s.id = st.Size(), st.ModTime(), fileID(st)
		if st.IsDir() {
			s.size = -1
		}
	}
	return s
}

// walkCommit is one commit of logLocal's walk.
type walkCommit struct {
	id   string
	c    localCommit
	date int64
}

// subjectOf is %s of a message: its first paragraph after any blank
// lines, each line without its trailing white space, joined by spaces.
func subjectOf(msg string) string {
	var parts []string
	started := false
	for msg != "" {
		line := msg
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			line, msg = msg[:i+1], msg[i+1:]
		} else {
			msg = ""
		}
		trimmed := strings.TrimRight(line, " \t\n\r")
		if trimmed == "" {
			if started {
				break
			}
			continue
		}
		started = true
		parts = append(parts, trimmed)
	}
	return strings.Join(parts, " ")
}

// abbreviator gives object ids as --abbrev=12 does where 12 digits are
// enough.
type abbreviator struct {
	objs   *Objects
	fanout map[string]bool     // the object directory's entries
	loose  map[string][]string // fan-out directory → its entries
	// stamps are the directories read, each stamped before it was read.
	stamps []refStamp
}

const abbrevLen = 12

// abbrev is id's first 12 digits, or ErrNotLocal when another object
// shares them (git would give more).
func (a *abbreviator) abbrev(id string) (string, error) {
	prefix := id[:abbrevLen]
	dir := id[:2]
	if a.fanout == nil {
		// Which fan-out directories exist, in one read: a packed
		// repository has few.
		a.stamps = append(a.stamps, dirStamp(a.objs.dir))
		ents, err := os.ReadDir(a.objs.dir)
		if err != nil {
			return "", ErrNotLocal
		}
		a.fanout = map[string]bool{}
		for _, e := range ents {
			a.fanout[e.Name()] = true
		}
	}
	names, ok := a.loose[dir]
	if !ok && a.fanout[dir] {
		a.stamps = append(a.stamps, dirStamp(filepath.Join(a.objs.dir, dir)))
		ents, err := os.ReadDir(filepath.Join(a.objs.dir, dir))
		if err != nil && !os.IsNotExist(err) {
			return "", ErrNotLocal
		}
		for _, e := range ents {
			names = append(names, e.Name())
		}
		a.loose[dir] = names
	}
	for _, name := range names {
		if strings.HasPrefix(name, prefix[2:]) && name != id[2:] {
			return "", ErrNotLocal
		}
	}
	if a.objs.packs == nil {
		if err := a.objs.listPacks(); err != nil {
			return "", ErrNotLocal
		}
	}
	if a.objs.idxBytes > maxLocalIndex {
		return "", ErrNotLocal
	}
	raw, err := hex.DecodeString(id)
	if err != nil {
		return "", ErrNotLocal
	}
	want := raw[:abbrevLen/2]
	for _, p := range a.objs.packs {
		if p.idx == nil {
			if err := a.objs.loadIndex(p); err != nil {
				return "", ErrNotLocal
			}
		}
		if sharesPrefix(p.idx, raw, want) {
			return "", ErrNotLocal
		}
	}
	return prefix, nil
}

// sharesPrefix reports whether the index lists an object other than the
// one whose id is raw with the same first bytes as want.
func sharesPrefix(idx *idxfile.MemoryIndex, raw, want []byte) bool {
	m := idx.FanoutMapping[raw[0]]
	if m < 0 || m >= len(idx.Names) {
		return false
	}
	names := idx.Names[m]
	size := len(raw)
	count := len(names) / size
	i := sort.Search(count, func(i int) bool { return bytes.Compare(names[i*size:i*size+len(want)], want) >= 0 })
	for ; i < count; i++ {
		e := names[i*size : (i+1)*size]
		if !bytes.HasPrefix(e, want) {
			break
		}
		if !bytes.Equal(e, raw) {
			return true
		}
	}
	return false
}
