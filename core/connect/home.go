package connect

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/core/config"
)

// A confined session's HOME (Options.Confined) is written by the agent in
// it as well as by Sluice, and it lasts across sessions. Outside the
// sandbox, a link the agent plants there names the person's own files:
// ~/.claude.json → /home/p/src/shop/package.json, ~/.gemini → the
// person's real ~/.gemini. Sluice runs as the person: following such a
// link, a write would land in the person's file and a read would bring
// its bytes into the home, where the agent reads them. So in a confined
// home nothing is reached through a link. Every path is taken relative
// to the home and opened through an os.Root (openat; no link may lead out
// of it and none may be absolute, whatever the agent does meanwhile); a
// file with a link on its way reads as absent; writing it removes the
// link (the agent's own, in a directory that is Sluice's) and makes real
// directories in its place.

// ErrOutsideHome: a path that a confined home's plan names lies outside
// that home.
var ErrOutsideHome = errors.New("path outside the confined home")

// ConfinedHome is a confined session's HOME, opened so that nothing in it
// is reached through a link.
type ConfinedHome struct {
	dir  string
	root *os.Root
}

// OpenConfinedHome opens the confined home dir, which must exist.
func OpenConfinedHome(dir string) (*ConfinedHome, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &ConfinedHome{dir: filepath.Clean(dir), root: root}, nil
}

// Close releases the home's directory.
func (h *ConfinedHome) Close() error { return h.root.Close() }

// Dir is the home's directory on the host.
func (h *ConfinedHome) Dir() string { return h.dir }

// rel is path (absolute, inside the home) relative to the home.
func (h *ConfinedHome) rel(path string) (string, error) {
	r, err := filepath.Rel(h.dir, filepath.Clean(path))
	if err != nil || !filepath.IsLocal(r) {
		return "", fmt.Errorf("%w: %s is not inside %s", ErrOutsideHome, path, h.dir)
	}
	return r, nil
}

// local checks that name is a path relative to the home, inside it.
func local(name string) (string, error) {
	name = filepath.Clean(name)
	if !filepath.IsLocal(name) {
		return "", fmt.Errorf("%w: %q", ErrOutsideHome, name)
	}
	return name, nil
}

// prefixes are the paths of name's components, shortest first: a/b/c
// gives a, a/b, a/b/c.
func prefixes(name string) []string {
	var out []string
	for i := 0; i <= len(name); i++ {
		if i == len(name) || name[i] == filepath.Separator {
			out = append(out, name[:i])
		}
	}
	return out
}

// firstLink is the first component of name that is a symbolic link; ""
// when none is (also when a component is missing: nothing beyond it can
// be a link).
func (h *ConfinedHome) firstLink(name string) (string, error) {
	for _, p := range prefixes(name) {
		st, err := h.root.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "", nil
		case err != nil:
			return "", err
		case st.Mode()&fs.ModeSymlink != 0:
			return p, nil
		}
	}
	return "", nil
}

// stat describes name without following a link; a link on its way makes
// it absent (fs.ErrNotExist).
func (h *ConfinedHome) stat(name string) (fs.FileInfo, error) {
	link, err := h.firstLink(name)
	if err != nil {
		return nil, err
	}
	if link != "" {
		return nil, &fs.PathError{Op: "lstat", Path: filepath.Join(h.dir, name), Err: fs.ErrNotExist}
	}
	return h.root.Lstat(name)
}

// readFile reads name; a link on its way makes it absent.
func (h *ConfinedHome) readFile(name string) ([]byte, error) {
	if _, err := h.stat(name); err != nil {
		return nil, err
	}
	f, err := h.root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// RemoveLinks removes every symbolic link on the way to name (a path
// relative to the home, its last component included), the agent's own:
// Sluice never makes one in a confined home.
func (h *ConfinedHome) RemoveLinks(name string) error {
	name, err := local(name)
	if err != nil {
		return err
	}
	// Removing the first link leaves nothing beyond it; the loop ends
	// once no link is left on the way (the agent of a session that runs
	// meanwhile may plant another; the next start removes it).
	for range 8 {
		link, err := h.firstLink(name)
		if err != nil || link == "" {
			return err
		}
		if err := h.root.Remove(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove the link %s: %w", filepath.Join(h.dir, link), err)
		}
	}
	return fmt.Errorf("%s: links keep appearing on its way", filepath.Join(h.dir, name))
}

// MakeDir makes name (relative to the home) and its parents as real
// directories: a link on the way is removed first and a directory made in
// its place.
func (h *ConfinedHome) MakeDir(name string, perm fs.FileMode) error {
	name, err := local(name)
	if err != nil {
		return err
	}
	if name == "." {
		return nil
	}
	if err := h.RemoveLinks(name); err != nil {
		return err
	}
	for _, p := range prefixes(name) {
		err := h.root.Mkdir(p, perm)
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create %s: %w", filepath.Join(h.dir, p), err)
		}
		st, err := h.root.Lstat(p)
		if err != nil {
			return err
		}
		if !st.IsDir() {
			return fmt.Errorf("%w: %s is not a directory", ErrConflict, filepath.Join(h.dir, p))
		}
	}
	return nil
}

// WriteFile writes name (relative to the home) atomically with perm: a
// new file in the same directory, synced, renamed over name (a link at
// name is replaced, never followed), and the directory synced. Its
// directory is made as MakeDir does.
func (h *ConfinedHome) WriteFile(name string, data []byte, perm fs.FileMode) error {
	name, err := local(name)
	if err != nil {
		return err
	}
	dir := filepath.Dir(name)
	if err := h.MakeDir(dir, 0o700); err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+filepath.Base(name)+".tmp-"+strings.ToLower(rand.Text()[:10]))
	f, err := h.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	defer h.root.Remove(tmp)
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if err := writeSyncClose(f, data); err != nil {
		return err
	}
	if err := h.root.Rename(tmp, name); err != nil {
		return err
	}
	d, err := h.root.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// disk is where a plan reads and writes its files: the person's own
// configuration through links (a dotfile manager's link is the person's,
// and the file it names is theirs), a confined home only inside it.
type disk struct {
	home *ConfinedHome
}

// target is where path's bytes are: the file a link names, except in a
// confined home.
func (d disk) target(path string) string {
	if d.home != nil {
		return path
	}
	if t, err := filepath.EvalSymlinks(path); err == nil {
		return t
	}
	return path
}

func (d disk) stat(path string) (fs.FileInfo, error) {
	if d.home == nil {
		return os.Stat(path)
	}
	name, err := d.home.rel(path)
	if err != nil {
		return nil, err
	}
	return d.home.stat(name)
}

func (d disk) readFile(path string) ([]byte, error) {
	if d.home == nil {
		return os.ReadFile(path)
	}
	name, err := d.home.rel(path)
	if err != nil {
		return nil, err
	}
	return d.home.readFile(name)
}

// writeFile writes path atomically, its directory made with dirPerm.
func (d disk) writeFile(path string, data []byte, perm, dirPerm fs.FileMode) error {
	if d.home == nil {
		dir := filepath.Dir(path)
		if err := os.MkdirAll(dir, dirPerm); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
		return config.WriteFileAtomic(path, data, perm)
	}
	name, err := d.home.rel(path)
	if err != nil {
		return err
	}
	return d.home.WriteFile(name, data, perm)
}
