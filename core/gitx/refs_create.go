package gitx

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// CreateRefLocal creates ref, a full name under refs/ that no worktree
// has a copy of, pointing at object id, in this process, as `git
// update-ref <ref> <id> <zero id>` does with the files backend: the ref's
// lock file (<ref>.lock, created exclusively, so that a git writing the
// same ref at the same moment fails or makes this fail) holds the id and
// is renamed onto the ref once the ref is known not to exist, loose or
// packed. The lock file is synced before the rename, so a crash never
// leaves an empty ref behind (git syncs refs only when core.fsync asks).
// It returns ErrNotLocal, having written nothing, wherever git must do
// it: refs not kept in files (extensions.refStorage, a reftable), objects
// that are not SHA-1, a reflog to write (core.logAllRefUpdates=always, or
// one that exists for the ref), shared-repository permissions, a name git
// would check by other rules, or anything in the way (the ref or its lock
// exists, a file or packed ref where a directory goes, refs below it);
// git then writes the ref or says why not. The caller must know that the
// object exists: git checks that, this does not.
func (repo *Repo) CreateRefLocal(ref, id string) error {
	if !repo.refsInFiles() || len(id) != 40 || !objectID.MatchString(id) ||
		!strings.HasPrefix(ref, "refs/") || !plainRefName(ref) || perWorktreeRef(ref) {
		return ErrNotLocal
	}
	if v, ok := repo.Config("core.logallrefupdates"); ok && strings.EqualFold(strings.TrimSpace(v), "always") {
		return ErrNotLocal
	}
	if _, ok := repo.Config("core.sharedrepository"); ok {
		return ErrNotLocal
	}
	common := repo.CommonDir
	if _, err := os.Lstat(filepath.Join(common, "logs", filepath.FromSlash(ref))); !errors.Is(err, fs.ErrNotExist) {
		return ErrNotLocal
	}
	conflict, packed, known := packedConflict(common, ref)
	if conflict || !known {
		return ErrNotLocal
	}
	p := filepath.Join(common, filepath.FromSlash(ref))
	if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
		return ErrNotLocal
	}
	lock := p + ".lock"
	f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return ErrNotLocal
	}
	done := false
	defer func() {
		if !done {
			os.Remove(lock)
		}
	}()
	_, werr := f.WriteString(id + "\n")
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr != nil || cerr != nil {
		return ErrNotLocal
	}
	// Under the lock: the ref must not exist, loose or packed (packed-refs
	// is read again only if it changed meanwhile), nor a ref that is a
	// directory of it or below it (git's name conflict).
	if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
		return ErrNotLocal
	}
	if _, again, _ := packedConflict(common, ""); !again.same(packed) {
		if conflict, _, known := packedConflict(common, ref); conflict || !known {
			return ErrNotLocal
		}
	}
	if err := os.Rename(lock, p); err != nil {
		return ErrNotLocal
	}
	done = true
	return nil
}

// refsInFiles reports whether the repository keeps its refs in files
// and its objects as SHA-1, the only kind CreateRefLocal writes.
func (repo *Repo) refsInFiles() bool {
	if f := repo.ObjectFormat; f != "" && f != "sha1" {
		return false
	}
	if _, ok := repo.Config("extensions.refstorage"); ok {
		return false
	}
	_, err := os.Lstat(filepath.Join(repo.CommonDir, "reftable"))
	return errors.Is(err, fs.ErrNotExist)
}

// perWorktreeRef reports whether ref is one each worktree has its own of.
func perWorktreeRef(ref string) bool {
	for _, p := range []string{"refs/bisect/", "refs/worktree/", "refs/rewritten/"} {
		if strings.HasPrefix(ref, p) {
			return true
		}
	}
	return false
}

// packedConflict reports whether packed-refs holds ref, a ref one of
// whose directories ref would be, or a ref below ref (known false when
// packed-refs cannot be read; none holds nothing), and which file it
// read. With ref "" it only says which file there is.
func packedConflict(common, ref string) (conflict bool, file packedFile, known bool) {
	p := filepath.Join(common, "packed-refs")
	st, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, packedFile{}, true
	case err != nil:
		return false, packedFile{}, false
	}
	file = packedFile{st}
	if ref == "" {
		return false, file, true
	}
	packed, err := os.ReadFile(p)
	if err != nil {
		return false, file, false
	}
	if !bytes.HasSuffix(packed, []byte("\n")) {
		packed = append(packed, '\n')
	}
	if bytes.Contains(packed, []byte(" "+ref+"\n")) || bytes.Contains(packed, []byte(" "+ref+"/")) {
		return true, file, true
	}
	for dir := ref; ; {
		i := strings.LastIndexByte(dir, '/')
		if i <= len("refs") {
			return false, file, true
		}
		dir = dir[:i]
		if bytes.Contains(packed, []byte(" "+dir+"\n")) {
			return true, file, true
		}
	}
}

// packedFile is packed-refs as it was when read (nil info: there was
// none). git replaces it by a rename whenever it writes it.
type packedFile struct{ info fs.FileInfo }

func (f packedFile) same(g packedFile) bool {
	if f.info == nil || g.info == nil {
		return f.info == nil && g.info == nil
	}
	return os.SameFile(f.info, g.info) && f.info.Size() == g.info.Size() && f.info.ModTime().Equal(g.info.ModTime())
}
