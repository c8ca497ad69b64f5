package kube

// The confined HOME of a session in a pod comes back as a three-way apply,
// never as a mirror: the HOME is shared by the program's sessions (a
// bubblewrap or Docker session binds it live), so only what the agent
// changed in the pod relative to what went in is carried, and only onto a
// path the HOME still holds as it went in.
//
//   - what went in: packDir records every path of the HOME it archives
//     (type, mode, size, SHA-256, link target) as it reads it through an
//     os.Root (homeIn);
//   - the pod's baseline: before the agent starts, `sluice-sidecar pod-tree
//     --manifest-only` writes the manifest of the pod's HOME as copied in;
//   - at the end (the agent ended, its copy came back, the pod not yet
//     deleted; or an app that found the launcher gone read the copy back,
//     EndSession, from what went in as the launcher kept it beside the
//     copy, homeInName): pod-tree with that baseline writes the new
//     manifest and every entry whose lstat changed. The archive is
//     untrusted: it is read whole into a staging directory beside the HOME
//     and checked (the manifest's names by workspace.ParseTreeManifest,
//     each entry listed there with its type and once, no other entry
//     type, the entries and file bytes bounded) before anything is
//     written; a refusal writes nothing. Then each path the agent added,
//     changed or removed is applied (homeback_linux.go) only where the
//     host still holds what went in (or nothing, for an add); otherwise
//     the host's is kept and the log says so. The check and the rename
//     (or the unlink, for a removal) are two steps: a write another
//     session makes to the same path between them is replaced (or
//     removed). The launcher then removes homeInName, so that an app
//     ending the session does not apply the same changes a second time
//     (homeBackOnce). Every read of the pod and the apply are bounded in
//     time (syncWait), and a refused archive ends the exec's stream.
//
// Sluice's own writes at the start (PrepareHome: the MCP entry, the folder
// trust, .gitconfig) come back like any other path the agent changed: they
// are what a bubblewrap session leaves in the HOME too, PrepareHome writes
// them again (removing any link on their way) at every start, and the
// agent's settings file that holds them also holds its login.

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace"
)

// homeRecord is one path of the confined HOME: what went into the pod, or
// what the pod sent back for it.
type homeRecord struct {
	// typ is 'f', 'd' or 'l' (as a tree manifest's).
	typ  byte
	mode uint32 // permission bits
	size int64
	sum  [sha256.Size]byte
	link string
	// staged is a sent file's name in the staging directory.
	staged string
	// dev and ino are the HOME's file's, as hostState stat'ed it.
	dev, ino uint64
}

// sameContent reports whether a and b hold the same: type, and a file's
// bytes or a link's target (a directory is a directory).
func (a homeRecord) sameContent(b homeRecord) bool {
	if a.typ != b.typ {
		return false
	}
	switch a.typ {
	case 'f':
		return a.size == b.size && a.sum == b.sum
	case 'l':
		return a.link == b.link
	}
	return true
}

// homeLimits bound what a pod's HOME may send back: entries (the manifest's
// records and the archive's entries each), file bytes and the manifest's
// bytes.
type homeLimits struct{ entries, bytes, manifest int64 }

// defaultHomeLimits: the HOME volume holds at most homeBytes; an agent's
// HOME holds thousands of paths (Claude Code's or Codex's settings,
// history, projects' transcripts, caches), not the hundreds of thousands
// a repository's tree may: a HOME past homeEntries does not come back
// (each path applied costs a file sync, so the bound is also the apply's
// time). homeManifestBytes is room for homeEntries records with paths of
// some 300 bytes on average.
var defaultHomeLimits = homeLimits{entries: homeEntries, bytes: homeBytes, manifest: homeManifestBytes}

const (
	homeEntries       = 20_000
	homeManifestBytes = 8 << 20
)

// homeDelta is a pod's HOME archive, read and checked: its manifest and
// the entries it sent.
type homeDelta struct {
	man  *workspace.TreeManifest
	sent map[string]homeRecord
}

// homeRefused is the error of an archive refused for what it holds.
func homeRefused(name, format string, a ...any) error {
	return &errcode.Error{Code: errcode.InvalidArgument,
		Msg: fmt.Sprintf("the HOME from the session's pod was refused, nothing was written: %s ", strconv.Quote(name)) + fmt.Sprintf(format, a...),
		Err: workspace.ErrArchiveUnsafe}
}

func homeOverLimit(what string, n int64) error {
	return &errcode.Error{Code: errcode.InvalidArgument,
		Msg: fmt.Sprintf("the HOME from the session's pod was refused, nothing was written: more than %d %s", n, what),
		Err: workspace.ErrArchiveLimit}
}

// readHomeArchive reads a pod-tree archive of the pod's HOME, staging each
// file it sends in stage, and checks all of it; nothing outside stage is
// written.
func readHomeArchive(r io.Reader, stage *os.Root, lim homeLimits) (*homeDelta, error) {
	tr := tar.NewReader(r)
	hdr, err := tr.Next()
	if err != nil && !errors.Is(err, tar.ErrInsecurePath) {
		return nil, &errcode.Error{Code: errcode.InvalidArgument, Msg: "the HOME from the session's pod is not an archive", Err: errors.Join(workspace.ErrArchiveTruncated, err)}
	}
	if hdr.Name != workspace.TreeManifestName || hdr.Typeflag != tar.TypeReg {
		return nil, homeRefused(hdr.Name, "comes first, where the manifest should")
	}
	if maxMan := min(lim.manifest, workspace.MaxTreeManifestBytes); hdr.Size > maxMan {
		return nil, homeOverLimit("bytes of manifest", maxMan)
	}
	data, err := io.ReadAll(io.LimitReader(tr, hdr.Size))
	if err != nil || int64(len(data)) != hdr.Size {
		return nil, &errcode.Error{Code: errcode.InvalidArgument, Msg: "the HOME from the session's pod was cut short", Err: errors.Join(workspace.ErrArchiveTruncated, err, io.ErrUnexpectedEOF)}
	}
	d := &homeDelta{sent: map[string]homeRecord{}}
	if d.man, err = workspace.ParseTreeManifest(data, lim.entries); err != nil {
		return nil, err
	}
	idx := d.man.Index()
	var entries, total int64
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return d, nil
		}
		if hdr != nil && errors.Is(err, tar.ErrInsecurePath) {
			return nil, homeRefused(hdr.Name, "is not a local path")
		}
		if err != nil {
			return nil, &errcode.Error{Code: errcode.InvalidArgument, Msg: "the HOME from the session's pod was cut short", Err: errors.Join(workspace.ErrArchiveTruncated, err)}
		}
		if stage == nil {
			return nil, homeRefused(hdr.Name, "comes where only the manifest should")
		}
		if entries++; entries > lim.entries {
			return nil, homeOverLimit("entries", lim.entries)
		}
		name := hdr.Name
		var e homeRecord
		switch hdr.Typeflag {
		case tar.TypeDir:
			e.typ = 'd'
			if !strings.HasSuffix(name, "/") {
				return nil, homeRefused(name, "is a directory whose name does not end in /")
			}
			name = strings.TrimSuffix(name, "/")
		case tar.TypeReg:
			e.typ = 'f'
		case tar.TypeSymlink:
			e.typ = 'l'
		default:
			return nil, homeRefused(name, "is of a type the HOME does not take (%q)", hdr.Typeflag)
		}
		if rec, ok := idx[name]; !ok || rec.Type != e.typ {
			return nil, homeRefused(name, "is not in the manifest, or not as this type")
		}
		if _, dup := d.sent[name]; dup {
			return nil, homeRefused(name, "comes twice")
		}
		if hdr.Mode < 0 || hdr.Mode > 0o7777 {
			return nil, homeRefused(name, "has malformed mode bits")
		}
		e.mode = uint32(hdr.Mode) & 0o777
		switch e.typ {
		case 'l':
			if hdr.Linkname == "" || len(hdr.Linkname) >= 4096 || strings.IndexByte(hdr.Linkname, 0) >= 0 {
				return nil, homeRefused(name, "is a link with a malformed target")
			}
			e.link = hdr.Linkname
		case 'f':
			if hdr.Size < 0 || hdr.Size > lim.bytes-total {
				return nil, homeOverLimit("bytes of files", lim.bytes)
			}
			total += hdr.Size
			e.staged = strconv.FormatInt(entries, 10)
			if e.size, e.sum, err = stageFile(stage, e.staged, tr, hdr.Size); err != nil {
				return nil, err
			}
		}
		d.sent[name] = e
	}
}

// stageFile writes the next size bytes of r to stage's name and returns
// their count and SHA-256.
func stageFile(stage *os.Root, name string, r io.Reader, size int64) (int64, [sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	f, err := stage.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, sum, errcode.Wrap(errcode.Internal, err, "cannot stage the HOME from the session's pod")
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, size))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != size {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return 0, sum, &errcode.Error{Code: errcode.InvalidArgument, Msg: "the HOME from the session's pod was cut short", Err: errors.Join(workspace.ErrArchiveTruncated, err)}
	}
	h.Sum(sum[:0])
	return n, sum, nil
}

// homeTree runs pod-tree on the pod's HOME with prev on its stdin and
// hands its archive to read.
// An archive refused (or one that goes on past its end) ends the exec's
// stream at once: client-go would otherwise read and discard the rest of
// what the pod sends, for as long as it sends.
func (r *Runtime) homeTree(ctx context.Context, pod string, prev []byte, manifestOnly bool, read func(io.Reader) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	readC := make(chan error, 1)
	go func() {
		err := read(pr)
		if err == nil {
			err = drainTail(pr)
		}
		if err != nil {
			cancel()
		}
		pr.CloseWithError(err)
		readC <- err
	}()
	cmd := []string{keeperDir + "/run/bin/sluice-sidecar", "pod-tree", "--root", keeperDir + "/home",
		"--max-bytes", strconv.FormatInt(homeBytes, 10)}
	if manifestOnly {
		cmd = append(cmd, "--manifest-only")
	}
	err := r.execIn(ctx, pod, containerKeeper, cmd, bytes.NewReader(prev), pw)
	pw.CloseWithError(errors.Join(err, io.ErrUnexpectedEOF))
	readErr := <-readC
	if err != nil {
		return errors.Join(err, readErr)
	}
	return readErr
}

// maxArchiveTail bounds what may follow an archive's end (tar's padding).
const maxArchiveTail = 64 << 10

// drainTail reads what follows an archive's end, refusing more than
// maxArchiveTail bytes of it; how the stream then ends is the exec's to
// say.
func drainTail(r io.Reader) error {
	n, _ := io.Copy(io.Discard, io.LimitReader(r, maxArchiveTail+1))
	if n > maxArchiveTail {
		return homeOverLimit("bytes after the archive's end", maxArchiveTail)
	}
	return nil
}

// homeBaseline takes the manifest of the pod's HOME as copied in, before
// the agent starts: what its end is read back against.
func (s *SessionRun) homeBaseline(ctx context.Context) error {
	var data []byte
	err := s.r.homeTree(ctx, s.name, nil, true, func(r io.Reader) error {
		d, err := readHomeArchive(r, nil, homeLimits{entries: defaultHomeLimits.entries, manifest: defaultHomeLimits.manifest})
		if err != nil {
			return err
		}
		data = d.man.Marshal()
		return nil
	})
	if err != nil {
		return err
	}
	s.homePod = data
	return nil
}

// homeBack carries the agent's changes to its HOME in the pod back to the
// confined HOME (see the top of this file). It returns how many paths were
// applied and how many were kept as the host had them.
func (s *SessionRun) homeBack(ctx context.Context) (applied, kept int, err error) {
	if s.homeIn == nil || s.homePod == nil {
		return 0, 0, errcode.New(errcode.Internal, "the HOME that went into the session's pod was not recorded")
	}
	return backHome(ctx, s.places.homeHost, s.homeIn, s.homePod, s.homeLimits,
		func(read func(io.Reader) error) error { return s.r.homeTree(ctx, s.name, s.homePod, false, read) },
		func(p, why string) {
			s.r.log.Warn("kube: a change the agent made to its HOME in the pod is not carried back: "+why, "pod", s.name, "path", p)
		})
}

// backHome is homeBack's work: basePod is the pod's manifest of its HOME
// as copied in, tree runs pod-tree against it and hands its archive to
// read, keep is told of each path kept as the HOME has it.
func backHome(ctx context.Context, home string, in map[string]homeRecord, basePod []byte, lim homeLimits,
	tree func(read func(io.Reader) error) error, keep func(p, why string)) (applied, kept int, err error) {
	base, err := workspace.ParseTreeManifest(basePod, lim.entries)
	if err != nil {
		return 0, 0, err
	}
	// Staged beside the HOME (whose parent is Sluice's, not the agent's),
	// where nothing reads it; what a crash left there goes first.
	removeStaleStages(filepath.Dir(home))
	stageDir, err := os.MkdirTemp(filepath.Dir(home), stagePrefix+"*")
	if err != nil {
		return 0, 0, errcode.Wrap(errcode.Internal, err, "cannot stage the HOME from the session's pod")
	}
	defer os.RemoveAll(stageDir)
	stage, err := os.OpenRoot(stageDir)
	if err != nil {
		return 0, 0, err
	}
	defer stage.Close()
	var d *homeDelta
	if err := tree(func(r io.Reader) error {
		var err error
		d, err = readHomeArchive(r, stage, lim)
		return err
	}); err != nil {
		return 0, 0, err
	}
	return applyHome(ctx, home, in, base, d, stage, keep)
}

// stageAge is the age past which a staging directory beside the HOMEs is
// a crash's leftover: an apply is bounded by syncWait.
const stageAge = 2 * time.Hour

// removeStaleStages removes the staging directories in dir that a crash
// left (older than stageAge); one in use by another session's apply is
// younger.
func removeStaleStages(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), stagePrefix) {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > stageAge {
			_ = os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// stagePrefix begins the name of a staging directory beside the HOMEs.
const stagePrefix = ".sluice-home-back-"

// homeInName is the file, in the session's directory (the copy's parent,
// Sluice's), that keeps what went into a session's pod of its HOME while
// the pod lives, so that an app that finds the launcher gone
// (EndSession) carries the HOME back as the launcher would have.
const homeInName = "home-in.json"

type homeInFile struct {
	Home string         `json:"home"`
	Pod  []byte         `json:"pod"`
	In   []homeInRecord `json:"in"`
}

type homeInRecord struct {
	Path string `json:"path"`
	Type string `json:"type"`
	Mode uint32 `json:"mode"`
	Size int64  `json:"size,omitempty"`
	Sum  string `json:"sum,omitempty"`
	Link string `json:"link,omitempty"`
}

func homeInPath(copyHost string) string { return filepath.Join(filepath.Dir(copyHost), homeInName) }

// saveHomeIn writes homeInName, atomically.
func saveHomeIn(copyHost, home string, in map[string]homeRecord, pod []byte) error {
	f := homeInFile{Home: home, Pod: pod, In: make([]homeInRecord, 0, len(in))}
	for _, p := range slices.Sorted(maps.Keys(in)) {
		r := in[p]
		rec := homeInRecord{Path: p, Type: string(r.typ), Mode: r.mode, Link: r.link}
		if r.typ == 'f' {
			rec.Size, rec.Sum = r.size, hex.EncodeToString(r.sum[:])
		}
		f.In = append(f.In, rec)
	}
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	dst := homeInPath(copyHost)
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".home-in-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// loadHomeIn reads homeInName (false: there is none).
func loadHomeIn(copyHost string) (string, map[string]homeRecord, []byte, bool, error) {
	data, err := os.ReadFile(homeInPath(copyHost))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, nil, false, nil
	}
	if err != nil {
		return "", nil, nil, false, err
	}
	var f homeInFile
	if err := json.Unmarshal(data, &f); err != nil || !filepath.IsAbs(f.Home) {
		return "", nil, nil, false, errcode.New(errcode.Internal, "%s cannot be read", homeInPath(copyHost))
	}
	in := make(map[string]homeRecord, len(f.In))
	for _, rec := range f.In {
		r := homeRecord{mode: rec.Mode & 0o777, size: rec.Size, link: rec.Link}
		if len(rec.Type) != 1 {
			return "", nil, nil, false, errcode.New(errcode.Internal, "%s cannot be read", homeInPath(copyHost))
		}
		r.typ = rec.Type[0]
		if r.typ == 'f' {
			b, err := hex.DecodeString(rec.Sum)
			if err != nil || len(b) != sha256.Size {
				return "", nil, nil, false, errcode.New(errcode.Internal, "%s cannot be read", homeInPath(copyHost))
			}
			copy(r.sum[:], b)
		}
		in[rec.Path] = r
	}
	return f.Home, in, f.Pod, true, nil
}

// homeBackOnce runs back, the launcher's apply of the HOME, then removes
// the session's homeInName (durably) whatever came of it: an app that
// ends the session after a launcher that died before removing the pod
// finds none, and does not apply the same changes a second time from the
// same record of what went in (which would undo another session's write
// made since, back to what went in).
func homeBackOnce(copyHost string, back func() (int, int, error)) (applied, kept int, err error) {
	applied, kept, err = back()
	p := homeInPath(copyHost)
	if rerr := os.Remove(p); rerr == nil {
		if d, derr := os.Open(filepath.Dir(p)); derr == nil {
			_ = d.Sync()
			d.Close()
		}
	}
	return applied, kept, err
}

// endSessionHome is EndSession's homeBack: from what the launcher kept
// of what went in (nothing kept, nothing carried).
func (r *Runtime) endSessionHome(ctx context.Context, pod, copyHost string) {
	r.endHomeFrom(ctx, pod, copyHost, func(base []byte, read func(io.Reader) error) error {
		return r.homeTree(ctx, pod, base, false, read)
	})
}

// endHomeFrom is endSessionHome's work, tree running pod-tree against base.
func (r *Runtime) endHomeFrom(ctx context.Context, pod, copyHost string, tree func(base []byte, read func(io.Reader) error) error) {
	home, in, base, ok, err := loadHomeIn(copyHost)
	if err == nil && ok {
		var applied, kept int
		applied, kept, err = backHome(ctx, home, in, base, defaultHomeLimits,
			func(read func(io.Reader) error) error { return tree(base, read) },
			func(p, why string) {
				r.log.Warn("kube: a change the agent made to its HOME in the pod is not carried back: "+why, "pod", pod, "path", p)
			})
		if err == nil && applied+kept > 0 {
			r.log.Info("kube: the agent's HOME came back from its pod", "pod", pod, "applied", applied, "kept", kept)
		}
	}
	if err != nil {
		r.log.Warn("kube: what the agent changed in its HOME in the pod did not come back; the confined HOME stays as it was", "pod", pod, "err", err)
	}
}
