//go:build linux

package kube

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace"
)

// applyHome applies d, the pod's HOME read back against base (the pod's
// manifest of its HOME as copied in), to the confined HOME home, given in,
// what went in: each path the agent removed (deepest first), then each it
// added or changed (a directory before what is in it). A path is written
// only where the HOME still holds what went in (or nothing, for an add);
// otherwise the HOME's is kept and keep is told why. A directory's mode is
// not carried back. Every step goes through descriptors opened from the
// HOME's without following a link; a file or link is written to a
// temporary name in its directory, synced and renamed over the old, so a
// crash leaves each path old or new (a directory is synced once after the
// run of paths written in it, not after each). A file whose content the
// agent left but whose mode it changed gets the mode (never a set-id or
// sticky bit). It stops at the first error that is not a disagreement with
// the HOME, and when ctx ends (each path written so far stays).
func applyHome(ctx context.Context, home string, in map[string]homeRecord, base *workspace.TreeManifest, d *homeDelta, stage *os.Root, keep func(path, why string)) (applied, kept int, err error) {
	hfd, err := unix.Open(home, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, 0, errcode.Wrap(errcode.Internal, err, "cannot open the confined HOME")
	}
	defer unix.Close(hfd)
	a := &homeApply{ctx: ctx, home: hfd, stage: stage, keep: keep, dirty: -1}
	defer a.syncDir()
	baseIdx := base.Index()
	now := d.man.Index()
	for i := len(base.Records) - 1; i >= 0 && a.next(); i-- {
		p := base.Records[i].Path
		was, went := in[p]
		if !went {
			continue
		}
		if _, still := now[p]; still {
			// Still there: removed only when it is now of another type.
			if e, sent := d.sent[p]; !sent || e.typ == was.typ {
				continue
			}
		}
		a.remove(p, was)
	}
	for _, r := range d.man.Records {
		if !a.next() {
			break
		}
		e, sent := d.sent[r.Path]
		if !sent {
			continue
		}
		was, went := in[r.Path]
		if went && was.typ == e.typ {
			mode := was.mode
			if b, ok := baseIdx[r.Path]; ok {
				mode = b.Mode & 0o777
			}
			if e.typ == 'd' || (was.sameContent(e) && (e.typ != 'f' || e.mode == mode)) {
				continue
			}
			a.change(r.Path, was, e)
			continue
		}
		a.add(r.Path, e)
	}
	a.syncDir()
	return a.applied, a.kept, a.err
}

type homeApply struct {
	ctx     context.Context
	home    int
	stage   *os.Root
	keep    func(path, why string)
	applied int
	kept    int
	err     error
	// dirty is the directory last written in, not yet synced (-1: none),
	// dirtyPath its path in the HOME.
	dirty     int
	dirtyPath string
}

// next reports whether the apply goes on: no error, ctx not ended.
func (a *homeApply) next() bool {
	if a.err == nil && a.ctx.Err() != nil {
		a.err = &errcode.Error{Code: errcode.Timeout, Msg: "the HOME from the session's pod was not applied in time; what was written so far stays", Err: a.ctx.Err()}
	}
	return a.err == nil
}

// written notes that dir (p's directory, still open by the caller) was
// written in: the directory written in before it, if another, is synced
// now, this one when the apply moves on from it. The renames of a
// directory's run of paths then cost one sync, not one each.
func (a *homeApply) written(dir int, p string) {
	dp := path.Dir(p)
	if a.dirty >= 0 && a.dirtyPath == dp {
		return
	}
	a.syncDir()
	fd, err := unix.Dup(dir)
	if err != nil {
		_ = unix.Fsync(dir)
		return
	}
	a.dirty, a.dirtyPath = fd, dp
}

func (a *homeApply) syncDir() {
	if a.dirty >= 0 {
		_ = unix.Fsync(a.dirty)
		unix.Close(a.dirty)
		a.dirty = -1
	}
}

const (
	whyChanged = "the HOME's copy changed meanwhile (another session's), which is kept"
	whyDir     = "its directory in the HOME is not as it went in, which is kept"
	whyMade    = "the HOME got its own meanwhile (another session's), which is kept"
	whyFull    = "the directory holds what another session put there, which is kept"
)

func (a *homeApply) conflict(p, why string) {
	a.kept++
	a.keep(p, why)
}

func (a *homeApply) fail(p string, err error) {
	a.err = errcode.Wrap(errcode.Internal, err, "cannot write %s in the confined HOME", p)
}

// parent opens p's directory in the HOME, following no link, and returns
// it with p's last name.
func (a *homeApply) parent(p string) (int, string, error) {
	dir, name := path.Split(p)
	fd, err := unix.Openat(a.home, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, "", err
	}
	for c := range strings.SplitSeq(strings.TrimSuffix(dir, "/"), "/") {
		if c == "" {
			continue
		}
		next, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, "", err
		}
		fd = next
	}
	return fd, name, nil
}

// hostStatHook, when set (by tests only), runs between hostState's stat
// of a regular file and its open: where another session's write lands.
var hostStatHook func(name string)

// hostState is what the HOME holds at name in dir (false: nothing).
func hostState(dir int, name string) (homeRecord, bool, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return homeRecord{}, false, nil
		}
		return homeRecord{}, false, err
	}
	r := homeRecord{mode: uint32(st.Mode) & 0o777, size: st.Size, dev: uint64(st.Dev), ino: uint64(st.Ino)}
	switch uint32(st.Mode) & unix.S_IFMT {
	case unix.S_IFDIR:
		r.typ = 'd'
	case unix.S_IFLNK:
		r.typ = 'l'
		buf := make([]byte, 4096)
		n, err := unix.Readlinkat(dir, name, buf)
		if err != nil {
			return r, true, err
		}
		r.link = string(buf[:n])
	case unix.S_IFREG:
		r.typ = 'f'
		if hostStatHook != nil {
			hostStatHook(name)
		}
		fd, err := openChecked(dir, name, r, unix.O_RDONLY)
		if errors.Is(err, errSwapped) {
			// Another session put something else there since the stat:
			// not what went in, so it is kept.
			r.typ = '?'
			return r, true, nil
		}
		if err != nil {
			return r, true, err
		}
		defer unix.Close(fd)
		// Read with plain read(2) on the descriptor checked to be the
		// regular file stat'ed (never through the poller, which would
		// wait on a FIFO), at most one byte past the size stat'ed: a file
		// that grows meanwhile then differs from anything compared.
		h := sha256.New()
		buf := make([]byte, 64<<10)
		var n int64
		for n <= st.Size {
			m, err := unix.Read(fd, buf[:min(int64(len(buf)), st.Size+1-n)])
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				return r, true, err
			}
			if m == 0 {
				break
			}
			h.Write(buf[:m])
			n += int64(m)
		}
		r.size = n
		h.Sum(r.sum[:0])
	default:
		r.typ = '?'
	}
	return r, true, nil
}

// errSwapped: the path no longer holds the regular file stat'ed.
var errSwapped = errors.New("the path changed since it was checked")

// openChecked opens name in dir, never following a link and never waiting
// (O_NONBLOCK: a FIFO swapped in opens at once), and checks that the
// descriptor is the regular file was stat'ed (same device and inode):
// errSwapped when it is not.
func openChecked(dir int, name string, was homeRecord, flags int) (int, error) {
	fd, err := unix.Openat(dir, name, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENXIO) || errors.Is(err, unix.EISDIR) {
			return -1, errSwapped
		}
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG || uint64(st.Dev) != was.dev || uint64(st.Ino) != was.ino {
		unix.Close(fd)
		return -1, errSwapped
	}
	return fd, nil
}

// is reports whether the HOME's got is still was, what went in.
func is(got, was homeRecord) bool {
	return got.sameContent(was) && (was.typ != 'f' || got.mode == was.mode)
}

func (a *homeApply) remove(p string, was homeRecord) {
	dir, name, err := a.parent(p)
	if err != nil {
		if !errors.Is(err, unix.ENOENT) {
			a.conflict(p, whyDir)
		}
		return
	}
	defer unix.Close(dir)
	got, ok, err := hostState(dir, name)
	switch {
	case err != nil:
		a.fail(p, err)
		return
	case !ok:
		return // gone already
	case !is(got, was):
		a.conflict(p, whyChanged)
		return
	}
	flags := 0
	if was.typ == 'd' {
		flags = unix.AT_REMOVEDIR
	}
	if err := unix.Unlinkat(dir, name, flags); err != nil {
		if errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) {
			a.conflict(p, whyFull)
			return
		}
		a.fail(p, err)
		return
	}
	a.applied++
	a.written(dir, p)
}

func (a *homeApply) change(p string, was, e homeRecord) {
	dir, name, err := a.parent(p)
	if err != nil {
		a.conflict(p, whyDir)
		return
	}
	defer unix.Close(dir)
	got, ok, err := hostState(dir, name)
	switch {
	case err != nil:
		a.fail(p, err)
	case !ok:
		a.conflict(p, "the HOME's copy was removed meanwhile (another session's), which is kept")
	case is(got, e):
		// As the pod has it already.
	case !is(got, was):
		a.conflict(p, whyChanged)
	case got.sameContent(e):
		// Only the mode changed: the file stays, its mode comes back.
		a.chmod(dir, name, p, got, e)
	default:
		a.put(dir, name, p, e)
	}
}

// chmod gives the regular file got at name in dir e's mode, through a
// descriptor checked to be got.
func (a *homeApply) chmod(dir int, name, p string, got, e homeRecord) {
	fd, err := openChecked(dir, name, got, unix.O_RDONLY)
	if errors.Is(err, errSwapped) {
		a.conflict(p, whyChanged)
		return
	}
	if err == nil {
		err = unix.Fchmod(fd, e.mode&0o777)
		if err == nil {
			err = unix.Fsync(fd)
		}
		unix.Close(fd)
	}
	if err != nil {
		a.fail(p, err)
		return
	}
	a.applied++
}

func (a *homeApply) add(p string, e homeRecord) {
	dir, name, err := a.parent(p)
	if err != nil {
		a.conflict(p, whyDir)
		return
	}
	defer unix.Close(dir)
	got, ok, err := hostState(dir, name)
	switch {
	case err != nil:
		a.fail(p, err)
	case ok && is(got, e):
	case ok:
		a.conflict(p, whyMade)
	default:
		a.put(dir, name, p, e)
	}
}

// put makes name in dir hold e: a directory made, a link or file written
// under a temporary name and renamed over name.
func (a *homeApply) put(dir int, name, p string, e homeRecord) {
	if e.typ == 'd' {
		if err := unix.Mkdirat(dir, name, e.mode|0o700); err != nil {
			if errors.Is(err, unix.EEXIST) {
				a.conflict(p, whyMade)
				return
			}
			a.fail(p, err)
			return
		}
		a.applied++
		a.written(dir, p)
		return
	}
	tmp := ".sluice-home-" + rand.Text()[:12]
	var err error
	if e.typ == 'l' {
		err = unix.Symlinkat(e.link, dir, tmp)
	} else {
		err = a.writeTemp(dir, tmp, e)
	}
	if err == nil {
		err = unix.Renameat(dir, tmp, dir, name)
	}
	if err != nil {
		_ = unix.Unlinkat(dir, tmp, 0)
		if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) {
			a.conflict(p, whyMade)
			return
		}
		a.fail(p, err)
		return
	}
	a.applied++
	a.written(dir, p)
}

// writeTemp writes e's staged bytes to a new file tmp in dir, synced.
func (a *homeApply) writeTemp(dir int, tmp string, e homeRecord) error {
	src, err := a.stage.Open(e.staged)
	if err != nil {
		return err
	}
	defer src.Close()
	fd, err := unix.Openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = io.Copy(f, src)
	if err == nil {
		err = f.Chmod(os.FileMode(e.mode))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
