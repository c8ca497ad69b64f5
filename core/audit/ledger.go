package audit

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/core/canonjson"
)

var (
	// ErrClosed is returned by Append, AppendSoon and AppendBatch after Close.
	ErrClosed = errors.New("audit: ledger is closed")

	// ErrCorrupt is returned when the ledger's files cannot be continued
	// safely: the last record is unreadable, a torn tail cannot be repaired
	// because it is the only record, a segment is missing from the middle,
	// or a checkpoint on disk contradicts the chain. The writer stops rather
	// than extend a chain it cannot vouch for; run verify-audit to see why.
	ErrCorrupt = errors.New("audit: ledger is corrupt")
)

const (
	// DefaultMaxFileBytes is the size at which the active file is rotated.
	DefaultMaxFileBytes = 4 << 20
	// DefaultMaxSegments is how many rotated segments are kept.
	DefaultMaxSegments = 4
)

// Options configure Open.
type Options struct {
	// Path is the active ledger file, e.g. $XDG_STATE_HOME/sluice/audit/audit.jsonl.
	Path string
	// Key signs every entry and checkpoint. With a nil Key entries are
	// hash-chained but unsigned.
	Key ed25519.PrivateKey
	// MaxFileBytes is the rotation threshold (default DefaultMaxFileBytes).
	MaxFileBytes int64
	// MaxSegments is how many rotated segments are kept (default
	// DefaultMaxSegments); older ones are pruned behind a checkpoint.
	MaxSegments int
	// Now supplies timestamps; nil means time.Now.
	Now func() time.Time
}

// Receipt identifies an entry that has been written: durably, unless
// AppendSoon wrote it (see there).
type Receipt struct {
	ID        string
	Sequence  uint64
	EntryHash string
}

// Ledger appends to one ledger. It is safe for concurrent use, and any
// number of Ledgers in any number of processes may append to the same path:
// every append takes an exclusive flock on <file>.lock and learns the chain
// head from the file itself.
type Ledger struct {
	path, dir, base, lockPath string
	key                       ed25519.PrivateKey
	keyID                     string
	maxFileBytes              int64
	maxSegments               int
	now                       func() time.Time

	mu    sync.Mutex // serialises this process's goroutines; flock is per open file
	lock  *os.File   // nil once closed
	check *lineChecker

	// soon is set while an entry AppendSoon wrote waits for its sync;
	// syncFile syncs a ledger file, soonAfter, when set, replaces
	// SyncSoonWithin, and afterFunc, when set, replaces time.AfterFunc
	// (seams for the tests that count syncs).
	soon      bool
	syncFile  func(*os.File) error
	soonAfter time.Duration
	afterFunc func(time.Duration, func())
}

// SyncSoonWithin is how long an entry written by AppendSoon may stay in the
// operating system's cache before it is synced to disk.
const SyncSoonWithin = 100 * time.Millisecond

// Open opens the ledger at opts.Path, creating its directory (0700) and file
// (0600) if needed, and repairs a torn last line left by a crashed writer.
// It refuses, with the file-safety errors, a directory that group or others
// can enter, and a ledger or lock file that is a symlink, has more than one
// hard link, or is readable by anyone else.
func Open(opts Options) (*Ledger, error) {
	if opts.Path == "" {
		return nil, errors.New("audit: Options.Path is empty")
	}
	path, err := filepath.Abs(opts.Path)
	if err != nil {
		return nil, err
	}
	if opts.Key != nil && len(opts.Key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("audit: signing key has %d bytes: %w", len(opts.Key), ErrKeyInvalid)
	}
	if opts.MaxFileBytes == 0 {
		opts.MaxFileBytes = DefaultMaxFileBytes
	}
	if opts.MaxSegments == 0 {
		opts.MaxSegments = DefaultMaxSegments
	}
	if opts.MaxFileBytes < 0 || opts.MaxSegments < 1 {
		return nil, errors.New("audit: MaxFileBytes must be positive and MaxSegments at least 1")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	l := &Ledger{
		path:         path,
		dir:          filepath.Dir(path),
		base:         filepath.Base(path),
		lockPath:     path + ".lock",
		key:          opts.Key,
		maxFileBytes: opts.MaxFileBytes,
		maxSegments:  opts.MaxSegments,
		now:          opts.Now,
	}
	var pub ed25519.PublicKey
	if l.key != nil {
		pub = l.key.Public().(ed25519.PublicKey)
		l.keyID = KeyID(pub)
	}
	l.check = newLineChecker(pub)
	l.check.foreignKeysOK = true
	if err := ensureDir(l.dir); err != nil {
		return nil, fmt.Errorf("audit: ledger directory: %w", err)
	}
	if l.lock, err = openSafe(l.lockPath, os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		return nil, fmt.Errorf("audit: lock file: %w", err)
	}
	err = l.locked(func() error {
		f, size, err := l.openActive()
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := l.repairTail(f, size); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		l.lock.Close()
		return nil, err
	}
	return l, nil
}

// Close syncs what AppendSoon left in the cache and releases the lock
// file. Appends after Close return ErrClosed.
func (l *Ledger) Close() error {
	serr := l.syncSoon()
	if errors.Is(serr, ErrClosed) {
		serr = nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lock == nil {
		return nil
	}
	err := errors.Join(serr, l.lock.Close())
	l.lock = nil
	return err
}

// Append writes one entry and syncs it to disk before returning. If it
// returns an error the entry is not in the ledger, and a caller that was
// asking permission to act through it must not act: the audit record comes
// first or the action does not happen.
func (l *Ledger) Append(e Entry) (Receipt, error) {
	rs, err := l.AppendBatch([]Entry{e})
	if err != nil {
		return Receipt{}, err
	}
	return rs[0], nil
}

// AppendSoon writes one entry like Append, but returns before it is synced:
// the entry is in the file when AppendSoon returns (every reader and writer
// of the ledger sees it, and it outlives this process), and it reaches the
// disk within SyncSoonWithin, at the next Append of any process (a sync
// covers the whole file), or at Close, whichever comes first. Only a crash
// of the machine in that window can lose it, and then the chain ends one
// entry earlier; it never breaks. It is for records of what changed
// nothing, such as an agent's read, whose answer does not wait on the disk;
// a record that permits an action is written with Append.
func (l *Ledger) AppendSoon(e Entry) (Receipt, error) {
	rs, err := l.appendBatch([]Entry{e}, false)
	if err != nil {
		return Receipt{}, err
	}
	l.mu.Lock()
	schedule := !l.soon && l.lock != nil
	l.soon = true
	l.mu.Unlock()
	if schedule {
		after := SyncSoonWithin
		if l.soonAfter > 0 {
			after = l.soonAfter
		}
		if l.afterFunc != nil {
			l.afterFunc(after, func() { _ = l.syncSoon() })
		} else {
			time.AfterFunc(after, func() { _ = l.syncSoon() })
		}
	}
	return rs[0], nil
}

// syncSoon syncs the active file for the entries AppendSoon left in the
// cache. A rotation since then synced the file it renamed (see rotate).
func (l *Ledger) syncSoon() error {
	return l.locked(func() error {
		if !l.soon {
			return nil
		}
		f, _, err := l.openActive()
		if err != nil {
			return err
		}
		defer f.Close()
		if err := l.sync(f); err != nil {
			return fmt.Errorf("audit: syncing %s: %w", l.path, err)
		}
		l.soon = false
		return nil
	})
}

func (l *Ledger) sync(f *os.File) error {
	if l.syncFile != nil {
		return l.syncFile(f)
	}
	return f.Sync()
}

// AppendBatch writes entries in order under one lock and one sync. Invalid
// entries are refused before anything is written. On error the returned
// receipts name the entries that are nonetheless durable (possible only when
// the batch spanned a rotation); the caller must treat the whole batch as
// not recorded and perform none of its actions.
func (l *Ledger) AppendBatch(entries []Entry) ([]Receipt, error) {
	return l.appendBatch(entries, true)
}

// appendBatch is AppendBatch; durable false leaves the sync to AppendSoon.
func (l *Ledger) appendBatch(entries []Entry, durable bool) ([]Receipt, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	bodies := make([]map[string]any, len(entries))
	for i, e := range entries {
		b, err := e.body()
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		bodies[i] = b
	}
	receipts := make([]Receipt, 0, len(entries))
	err := l.locked(func() error {
		f, size, err := l.openActive()
		if err != nil {
			return err
		}
		defer func() { f.Close() }()
		if size, err = l.repairTail(f, size); err != nil {
			return err
		}
		head, err := l.readHead(f, size)
		if err != nil {
			return err
		}
		var pending []byte
		var pendingReceipts []Receipt
		flush := func() error {
			if len(pending) == 0 {
				return nil
			}
			if err := l.write(f, size, pending, durable); err != nil {
				return err
			}
			size += int64(len(pending))
			receipts = append(receipts, pendingReceipts...)
			pending, pendingReceipts = pending[:0], pendingReceipts[:0]
			return nil
		}
		for _, b := range bodies {
			ts := l.now().UnixMilli()
			segID := head.segID
			if segID == "" {
				segID = uuid.NewString()
			}
			line, rec, err := l.build(b, head, segID, ts)
			if err != nil {
				return err
			}
			if head.segID != "" && size+int64(len(pending)+len(line)) > l.maxFileBytes {
				if err := flush(); err != nil {
					return err
				}
				nf, err := l.rotate(f, size, head)
				if err != nil {
					return err
				}
				f.Close()
				f, size = nf, 0
				segID = uuid.NewString()
				if line, rec, err = l.build(b, head, segID, ts); err != nil {
					return err
				}
			}
			pending = append(pending, line...)
			pendingReceipts = append(pendingReceipts, rec)
			head = chainHead{seq: rec.Sequence, hash: rec.EntryHash, segID: segID}
		}
		if err := flush(); err != nil {
			return err
		}
		if durable {
			l.soon = false
		}
		return nil
	})
	return receipts, err
}

// chainHead is what the next entry links to.
type chainHead struct {
	seq   uint64 // 0 before the first chained entry
	hash  string // genesisHash before the first chained entry
	segID string // the active file's segmentId; "" while it holds no chained entry
}

// build encodes one entry as a line (newline included).
func (l *Ledger) build(body map[string]any, head chainHead, segID string, ts int64) ([]byte, Receipt, error) {
	id, err := uuid.NewRandom()
	if err != nil {
		return nil, Receipt{}, fmt.Errorf("audit: entry id: %w", err)
	}
	m := body
	delete(m, "entryHash")
	delete(m, "signature")
	m["id"] = id.String()
	m["auditSchemaVersion"] = schemaVersion
	m["auditChainVersion"] = chainVersion
	m["sequence"] = head.seq + 1
	m["segmentId"] = segID
	m["previousHash"] = head.hash
	m["timestamp"] = ts
	if l.key != nil {
		m["signatureKeyId"] = l.keyID
		m["signatureVersion"] = signatureVersion
	}
	hashInput, err := canonjson.Marshal(m)
	if err != nil {
		return nil, Receipt{}, fmt.Errorf("%w: %v", ErrInvalidEntry, err)
	}
	sum := sha256.Sum256(hashInput)
	entryHash := sha256Prefix + hex.EncodeToString(sum[:])
	m["entryHash"] = entryHash
	if l.key != nil {
		sigInput, err := canonjson.Marshal(m)
		if err != nil {
			return nil, Receipt{}, err
		}
		m["signature"] = sigEncoding.EncodeToString(ed25519.Sign(l.key, sigInput))
	}
	line, err := canonjson.Marshal(m)
	if err != nil {
		return nil, Receipt{}, err
	}
	if len(line) > MaxLineBytes {
		return nil, Receipt{}, fmt.Errorf("%w: encoded entry exceeds %d bytes", ErrInvalidEntry, MaxLineBytes)
	}
	line = append(line, '\n')
	return line, Receipt{ID: id.String(), Sequence: head.seq + 1, EntryHash: entryHash}, nil
}

// locked runs fn holding both the in-process mutex and the cross-process
// flock.
func (l *Ledger) locked(fn func() error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lock == nil {
		return ErrClosed
	}
	if err := l.acquire(); err != nil {
		return err
	}
	defer unlockFile(l.lock)
	return fn()
}

// acquire takes the flock and makes sure it is on the file that is at the
// lock path now: a lock file that was deleted or replaced would let two
// processes each hold "the" lock.
func (l *Ledger) acquire() error {
	for attempt := 0; ; attempt++ {
		if err := lockFile(l.lock); err != nil {
			return fmt.Errorf("audit: locking %s: %w", l.lockPath, err)
		}
		held, err1 := l.lock.Stat()
		cur, err2 := os.Lstat(l.lockPath)
		if err1 == nil && err2 == nil && os.SameFile(held, cur) {
			return nil
		}
		unlockFile(l.lock)
		if attempt == 2 {
			return fmt.Errorf("audit: lock file %s keeps changing", l.lockPath)
		}
		nf, err := openSafe(l.lockPath, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("audit: lock file: %w", err)
		}
		l.lock.Close()
		l.lock = nf
	}
}

// openActive opens the active file for appending, creating it when missing
// (first use, or a crash between a rotation's rename and create).
func (l *Ledger) openActive() (*os.File, int64, error) {
	f, err := openSafe(l.path, os.O_RDWR|os.O_APPEND, 0)
	if errors.Is(err, fs.ErrNotExist) {
		f, err = openSafe(l.path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			if err = syncDir(l.dir); err != nil {
				f.Close()
			}
		}
	}
	if err != nil {
		return nil, 0, fmt.Errorf("audit: opening ledger: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

// write appends data and, when durable, syncs it. On failure it cuts the file back
// to off so that no partial line is left for the next writer.
func (l *Ledger) write(f *os.File, off int64, data []byte, durable bool) error {
	_, err := f.Write(data)
	if err == nil && durable {
		err = l.sync(f)
	}
	if err != nil {
		if terr := f.Truncate(off); terr == nil {
			f.Sync()
		}
		return fmt.Errorf("audit: appending to %s: %w", l.path, err)
	}
	return nil
}

// repairTail deals with a last line that lacks its newline, which is what a
// writer that died mid-write leaves. A fragment that is a complete, valid
// entry linking to the line before it gets its newline; anything else is cut
// off. A fragment that is the file's only record cannot be told apart from
// damage to the start of the chain, so the writer stops there.
func (l *Ledger) repairTail(f *os.File, size int64) (int64, error) {
	if size == 0 {
		return 0, nil
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], size-1); err != nil {
		return 0, err
	}
	if last[0] == '\n' {
		return size, nil
	}
	nl, err := lastNewline(f, size)
	if err != nil {
		return 0, err
	}
	start := nl + 1
	if l.tailAcceptable(f, start, size) {
		if err := l.write(f, size, []byte{'\n'}, true); err != nil {
			return 0, err
		}
		return size + 1, nil
	}
	if start == 0 {
		return 0, fmt.Errorf("%w: %s holds a single record that is incomplete or invalid", ErrCorrupt, l.path)
	}
	if err := f.Truncate(start); err != nil {
		return 0, fmt.Errorf("audit: truncating torn tail of %s: %w", l.path, err)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("audit: truncating torn tail of %s: %w", l.path, err)
	}
	return start, nil
}

func (l *Ledger) tailAcceptable(f *os.File, start, size int64) bool {
	if size-start > MaxLineBytes {
		return false
	}
	frag := make([]byte, size-start)
	if _, err := f.ReadAt(frag, start); err != nil {
		return false
	}
	info, reason := l.check.check(frag)
	if reason != "" {
		return false
	}
	if start == 0 {
		return true
	}
	prevLine, err := lastLine(f, start)
	if err != nil {
		return false
	}
	pc := newLineChecker(nil)
	prev, _, reason := pc.fields(prevLine)
	switch {
	case reason != "":
		return false
	case info.legacy:
		return prev.legacy
	case prev.legacy:
		return info.seq == 1 && isLegacyAnchor(info.previousHash)
	}
	return info.seq == prev.seq+1 &&
		string(info.previousHash) == string(prev.entryHash) &&
		string(info.segmentID) == string(prev.segmentID)
}

// readHead learns the chain head from the last line of the active file or,
// when that holds no chained entry, from the newest segment.
func (l *Ledger) readHead(f *os.File, size int64) (chainHead, error) {
	if size > 0 {
		line, err := lastLine(f, size)
		if err != nil {
			return chainHead{}, err
		}
		info, _, reason := l.check.fields(line)
		if reason != "" {
			return chainHead{}, fmt.Errorf("%w: last line of %s: %s", ErrCorrupt, l.base, reason)
		}
		if !info.legacy {
			segID := string(info.segmentID)
			if u, err := uuid.Parse(segID); err != nil || u.String() != segID {
				// The id becomes part of a file name at rotation.
				return chainHead{}, fmt.Errorf("%w: last line of %s: segmentId is not a UUID", ErrCorrupt, l.base)
			}
			return chainHead{seq: info.seq, hash: string(info.entryHash), segID: segID}, nil
		}
	}
	d, err := listLedgerDir(l.path)
	if err != nil {
		return chainHead{}, err
	}
	if len(d.segments) == 0 {
		if size > 0 {
			// Only legacy lines so far: the chain starts from their anchor.
			anchor, err := legacyHead(f, size)
			if err != nil {
				return chainHead{}, err
			}
			return chainHead{hash: anchor}, nil
		}
		return chainHead{hash: genesisHash}, nil
	}
	newest := d.segments[len(d.segments)-1]
	line, err := lastLineOfFile(newest.path)
	if err != nil {
		return chainHead{}, fmt.Errorf("audit: reading %s: %w", newest.name, err)
	}
	info, _, reason := l.check.fields(line)
	if reason == "" && (info.legacy || info.seq != newest.last) {
		reason = "last entry does not match the file name"
	}
	if reason != "" {
		return chainHead{}, fmt.Errorf("%w: last line of %s: %s", ErrCorrupt, newest.name, reason)
	}
	return chainHead{seq: info.seq, hash: string(info.entryHash)}, nil
}

// legacyHead folds the legacy lines that make up the active file into the
// anchor its first chained entry links to (FluxGit's rule, see
// nextLegacyAnchor).
func legacyHead(f *os.File, size int64) (string, error) {
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, size), MaxLineBytes+1)
	c := newLineChecker(nil)
	var anchor [32]byte
	for n := 1; ; n++ {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, io.EOF) && len(line) == 0 {
			return legacyAnchorString(anchor), nil
		}
		if err != nil {
			return "", fmt.Errorf("%w: legacy line %d: %v", ErrCorrupt, n, err)
		}
		info, m, reason := c.fields(bytes.TrimSuffix(line, []byte("\n")))
		if reason == "" && !info.legacy {
			reason = "chained entry among legacy lines"
		}
		var canon []byte
		if reason == "" {
			canon, reason = c.encodeMembers(m, func([]byte) bool { return false })
		}
		if reason != "" {
			return "", fmt.Errorf("%w: legacy line %d: %s", ErrCorrupt, n, reason)
		}
		anchor = nextLegacyAnchor(anchor, canon)
	}
}

// rotate renames the active file to its segment name, starts an empty active
// file, and prunes old segments. It returns the new active file.
func (l *Ledger) rotate(f *os.File, size int64, head chainHead) (*os.File, error) {
	first, err := l.firstChainedSeq(f, size)
	if err != nil {
		return nil, err
	}
	seg := filepath.Join(l.dir, segmentName(l.base, first, head.seq, head.segID))
	if _, err := os.Lstat(seg); !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: segment %s already exists", ErrCorrupt, filepath.Base(seg))
	}
	// Entries AppendSoon left unsynced (in any process) go to disk before
	// the file stops being the one a later sync would open.
	if err := l.sync(f); err != nil {
		return nil, fmt.Errorf("audit: rotating: %w", err)
	}
	if err := os.Rename(l.path, seg); err != nil {
		return nil, fmt.Errorf("audit: rotating: %w", err)
	}
	nf, err := openSafe(l.path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: rotating: %w", err)
	}
	if err := syncDir(l.dir); err != nil {
		nf.Close()
		return nil, fmt.Errorf("audit: rotating: %w", err)
	}
	if err := l.prune(); err != nil {
		nf.Close()
		return nil, err
	}
	return nf, nil
}

func (l *Ledger) firstChainedSeq(f *os.File, size int64) (uint64, error) {
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 64<<10)
	pc := newLineChecker(nil)
	for {
		line, err := readLine(r)
		if err != nil {
			return 0, fmt.Errorf("%w: scanning %s for its first entry: %v", ErrCorrupt, l.base, err)
		}
		info, _, reason := pc.fields(line)
		if reason != "" {
			return 0, fmt.Errorf("%w: %s: %s", ErrCorrupt, l.base, reason)
		}
		if !info.legacy {
			return info.seq, nil
		}
	}
}

// readLine reads one newline-terminated line of at most MaxLineBytes,
// without its newline, into a fresh slice.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxLineBytes+1 {
			return nil, errors.New("line longer than 256 KiB")
		}
		switch err {
		case nil:
			return line[:len(line)-1], nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if len(line) > 0 {
				return nil, errors.New("unterminated line")
			}
		}
		return nil, err
	}
}

// prune removes the oldest segments beyond maxSegments. Before each removal
// a signed checkpoint that carries the chain across the gap is written and
// synced, so a crash at any point leaves a ledger that verifies.
func (l *Ledger) prune() error {
	d, err := listLedgerDir(l.path)
	if err != nil {
		return err
	}
	segs := d.segments
	for len(segs) > l.maxSegments {
		oldest, next := segs[0], segs[1]
		if next.first != oldest.last+1 {
			return fmt.Errorf("%w: segments %s and %s are not contiguous", ErrCorrupt, oldest.name, next.name)
		}
		line, err := lastLineOfFile(oldest.path)
		if err != nil {
			return fmt.Errorf("audit: reading %s: %w", oldest.name, err)
		}
		info, _, reason := l.check.fields(line)
		if reason == "" && (info.legacy || info.seq != oldest.last) {
			reason = "last entry does not match the file name"
		}
		if reason != "" {
			return fmt.Errorf("%w: last line of %s: %s", ErrCorrupt, oldest.name, reason)
		}
		if err := l.ensureCheckpoint(d.checkpoints, next.first, string(info.entryHash), next.segID); err != nil {
			return err
		}
		if err := os.Remove(oldest.path); err != nil {
			return fmt.Errorf("audit: pruning %s: %w", oldest.name, err)
		}
		if err := syncDir(l.dir); err != nil {
			return err
		}
		segs = segs[1:]
		if d, err = listLedgerDir(l.path); err != nil {
			return err
		}
	}
	// Checkpoints for data already pruned, and temporary files of checkpoint
	// writes that were interrupted, serve no one.
	removed := false
	for _, c := range d.checkpoints {
		if len(segs) > 0 && c.nextSeq < segs[0].first {
			os.Remove(c.path)
			removed = true
		}
	}
	for _, t := range d.tmp {
		os.Remove(t)
		removed = true
	}
	if removed {
		return syncDir(l.dir)
	}
	return nil
}

// ensureCheckpoint makes sure exactly one checkpoint for nextSeq exists. One
// left by an earlier, interrupted prune is kept if it agrees with the chain;
// writing a second would make the ledger fail verification.
func (l *Ledger) ensureCheckpoint(existing []checkpointFile, nextSeq uint64, prevHash, segID string) error {
	var match []checkpointFile
	for _, c := range existing {
		if c.nextSeq == nextSeq {
			match = append(match, c)
		}
	}
	switch len(match) {
	case 0:
	case 1:
		data, err := readCheckpointData(match[0].path)
		if err == nil {
			cp, reason := parseCheckpoint(data, l.check)
			if reason == "" && cp.nextSeq == nextSeq && cp.previousHash == prevHash {
				return nil
			}
		}
		return fmt.Errorf("%w: checkpoint %s disagrees with the chain", ErrCorrupt, match[0].name)
	default:
		return fmt.Errorf("%w: %d checkpoints for sequence %d", ErrCorrupt, len(match), nextSeq)
	}
	m := map[string]any{
		"auditCheckpointVersion": checkpointVersion,
		"nextSequence":           nextSeq,
		"previousHash":           prevHash,
		"prunedThroughSequence":  nextSeq - 1,
		"createdAt":              l.now().UnixMilli(),
		"segmentId":              segID,
	}
	if l.key != nil {
		m["signatureKeyId"] = l.keyID
		m["signatureVersion"] = signatureVersion
		msg, err := canonjson.Marshal(m)
		if err != nil {
			return err
		}
		m["signature"] = sigEncoding.EncodeToString(ed25519.Sign(l.key, msg))
	}
	data, err := canonjson.Marshal(m)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	id := uuid.NewString()
	tmp := filepath.Join(l.dir, l.base+".tmp-checkpoint-"+id)
	final := filepath.Join(l.dir, checkpointName(l.base, nextSeq, id))
	tf, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, 0o600)
	if err != nil {
		return fmt.Errorf("audit: writing checkpoint: %w", err)
	}
	_, err = tf.Write(data)
	if err == nil {
		err = tf.Sync()
	}
	if cerr := tf.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err == nil {
		err = syncDir(l.dir)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("audit: writing checkpoint: %w", err)
	}
	return nil
}
