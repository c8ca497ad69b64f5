package kube

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace"
)

// The tree goes into the pod and comes back as tar streams over exec in
// the keeper container (see runtime.go). Both tars run in the pod as the
// run's user; what comes back is untrusted and ReplaceTree treats it so.

// tarIn unpacks stdin into the workspace volume. tarOut packs it without
// the repository (ReplaceTree would ignore it anyway; it need not travel):
// by naming the top-level entries but .git, since busybox's tar has no
// --exclude, and as an empty archive (two zero blocks) when there are none,
// since tar refuses to write one.
var (
	tarIn  = []string{"tar", "-x", "-f", "-", "-C", workspace.WorkspaceMount}
	tarOut = []string{"/bin/sh", "-c", `cd "$1" || exit 1
set --
for f in .[!.]* ..?* *; do
	[ -e "$f" ] || [ -L "$f" ] || continue
	[ "$f" = .git ] && continue
	set -- "$@" "./$f"
done
[ $# -gt 0 ] || exec dd if=/dev/zero bs=1024 count=1 2>/dev/null
exec tar -c -f - "$@"`, "sluice-tar-out", workspace.WorkspaceMount}
)

// errPodTarEnded ends the packer's stream once the pod's tar is gone.
var errPodTarEnded = errors.New("the pod's tar ended")

// copyIn streams the workspace tree (and its repository under .git/) into
// the pod's volumes.
func (r *Runtime) copyIn(ctx context.Context, pod string, spec workspace.ContainerSpec) error {
	err := r.copyInOnce(ctx, pod, spec)
	if streamBroke(ctx, err) {
		// Unpacking the same archive again over what arrived is harmless.
		r.log.Warn("kube: the copy into the pod broke off; copying again", "pod", pod, "err", err)
		err = r.copyInOnce(ctx, pod, spec)
	}
	return err
}

// streamBroke reports an exec stream that broke off without an answer
// from the API server (a websocket closed abnormally under load): worth
// one more try.
func streamBroke(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() == nil && errcode.Of(err) == errcode.Unavailable
}

func (r *Runtime) copyInOnce(ctx context.Context, pod string, spec workspace.ContainerSpec) error {
	pr, pw := io.Pipe()
	packC := make(chan error, 1)
	go func() {
		err := packForPod(pw, spec.TreePath, spec.GitDirPath)
		pw.CloseWithError(err)
		packC <- err
	}()
	err := r.execIn(ctx, pod, containerKeeper, tarIn, pr, nil)
	if err == nil {
		// A tar may exit at the end-of-archive marker before the stream's
		// last bytes were read: let the packer finish and say how it ended.
		_, _ = io.Copy(io.Discard, pr)
	}
	// A tar that failed stops reading: unblock the packer.
	pr.CloseWithError(errPodTarEnded)
	packErr := <-packC
	if packErr != nil && !errors.Is(packErr, errPodTarEnded) && err == nil {
		return packErr
	}
	if err != nil {
		if packErr != nil && errcode.Of(packErr) != errcode.Internal {
			return packErr
		}
		var ee *execError
		if !errors.As(err, &ee) {
			// The API server's answer, already typed.
			return err
		}
		return errcode.Wrap(errcode.Internal, err, "cannot copy the workspace into the run's pod: %v", err)
	}
	return nil
}

// packForPod writes PackTree's archive without the ".git/" directory's own
// header: in the pod that directory is the repository volume's mount
// point, owned by root, and a tar that tried to set its mode and time would
// fail. Its contents pass.
func packForPod(w io.Writer, treePath, gitDirPath string) error {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := workspace.PackTree(pw, treePath, gitDirPath)
		pw.CloseWithError(err)
		done <- err
	}()
	ferr := filterTar(w, pr)
	pr.CloseWithError(errors.New("filter ended"))
	if perr := <-done; perr != nil && !errors.Is(perr, io.ErrClosedPipe) {
		return perr
	}
	return ferr
}

func filterTar(w io.Writer, r io.Reader) error {
	// Large writes, so that the exec stream carries few large messages
	// rather than one per tar header and file: on the test node a stream of
	// 512-byte messages sometimes broke (websocket close 1006).
	bw := bufio.NewWriterSize(w, 256<<10)
	tr := tar.NewReader(r)
	tw := tar.NewWriter(bw)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			if err := tw.Close(); err != nil {
				return err
			}
			return bw.Flush()
		}
		if err != nil {
			return err
		}
		if h.Typeflag == tar.TypeDir && (h.Name == ".git/" || h.Name == ".git") {
			continue
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
	}
}

// spoolSlack is what a tar stream adds to its files' bytes: a header and
// padding per entry.
const spoolSlack = 1024

// copyOut packs the workspace volume in the pod and makes the host tree
// hold exactly that (ReplaceTree: atomic, refusing unsafe entries). The
// archive is spooled to a file beside the tree first and used only once
// the pod's tar exited 0: a tar that could not read a file still writes a
// well-formed archive without it, and replacing the tree from that would
// delete the file on the host.
func (r *Runtime) copyOut(ctx context.Context, pod string, spec workspace.ContainerSpec) error {
	uid, gid, _ := parseUser(spec.User)
	dir, base := filepath.Dir(spec.TreePath), filepath.Base(spec.TreePath)
	old, _ := filepath.Glob(filepath.Join(dir, "."+base+spoolInfix+"*"))
	for _, o := range old {
		_ = os.Remove(o)
	}
	f, err := os.CreateTemp(dir, "."+base+spoolInfix+"*")
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot spool the workspace archive")
	}
	defer func() {
		f.Close()
		os.Remove(f.Name())
	}()
	limit := workspace.DefaultArchiveMaxBytes + workspace.DefaultArchiveMaxEntries*spoolSlack
	lw := &capWriter{w: f, room: limit}
	err = r.execIn(ctx, pod, containerKeeper, tarOut, nil, lw)
	if streamBroke(ctx, err) && !lw.over {
		r.log.Warn("kube: the copy out of the pod broke off; copying again", "pod", pod, "err", err)
		if terr := f.Truncate(0); terr != nil {
			return errcode.Wrap(errcode.Internal, terr, "cannot spool the workspace archive")
		}
		if _, serr := f.Seek(0, io.SeekStart); serr != nil {
			return errcode.Wrap(errcode.Internal, serr, "cannot spool the workspace archive")
		}
		lw = &capWriter{w: f, room: limit}
		err = r.execIn(ctx, pod, containerKeeper, tarOut, nil, lw)
	}
	if err != nil {
		if lw.over {
			return &errcode.Error{Code: errcode.OutputLimit, Msg: "the workspace after the run is larger than a workspace may be", Err: workspace.ErrArchiveLimit}
		}
		var ee *execError
		if !errors.As(err, &ee) {
			return err
		}
		return errcode.Wrap(errcode.Internal, err, "cannot copy the workspace back from the run's pod: %v", err)
	}
	return replaceFromSpool(ctx, f, spec.TreePath, int(uid), int(gid))
}

// replaceFromSpool makes the tree hold the spooled archive. It stops when
// ctx ends: the spool is closed under ReplaceTree, whose next read fails
// and which then leaves the tree as it was, so a run whose caller gave up
// (and released the workspace) does not swap the tree afterwards.
func replaceFromSpool(ctx context.Context, f *os.File, treePath string, uid, gid int) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot read the spooled workspace archive")
	}
	stop := context.AfterFunc(ctx, func() { f.Close() })
	defer stop()
	_, err := workspace.ReplaceTree(bufio.NewReaderSize(&ctxReader{ctx: ctx, r: f}, 1<<16), treePath, workspace.ReplaceOptions{UID: uid, GID: gid})
	if err != nil && ctx.Err() != nil {
		return &errcode.Error{Code: errcode.Timeout, Msg: "the run was cancelled before its tree was copied back; the workspace is as it was", Err: errors.Join(ctx.Err(), err)}
	}
	return err
}

// ctxReader fails once ctx ended.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// spoolInfix names copyOut's spool files, beside the tree.
const spoolInfix = ".sluice-kube-out-"

// capWriter fails once more than room bytes were written.
type capWriter struct {
	w    io.Writer
	room int64
	over bool
}

func (c *capWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > c.room {
		c.over = true
		return 0, workspace.ErrArchiveLimit
	}
	c.room -= int64(len(p))
	return c.w.Write(p)
}
