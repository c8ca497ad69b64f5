package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// The store is one directory per workspace:
//
//	<StateDir>/workspaces/<id>/meta.json     metadata, replaced atomically
//	<StateDir>/workspaces/<id>/lock          flock: one operation at a time
//	<StateDir>/workspaces/<id>/secrets.json  AES-256-GCM sealed secrets
//	<StateDir>/workspaces/<id>/runs/*.json   run evidence (output redacted)
//	<StateDir>/workspaces/<id>/git/          the repository (host side)
//	<StateDir>/workspaces/<id>/tree/         the files, mounted at /workspace
//
// meta.json is written through config.WriteFileAtomic, so a crash leaves
// the old or the new metadata, never a torn file.

func (m *Manager) readMeta(id string) (*Workspace, error) {
	if !proposal.ValidID(id) {
		return nil, ErrInvalidID
	}
	b, err := os.ReadFile(m.metaPath(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot read the workspace metadata")
	}
	var w Workspace
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "the workspace metadata is corrupt")
	}
	if w.ID != id {
		return nil, errcode.Wrap(errcode.Internal, nil, "the workspace metadata names another workspace")
	}
	return &w, nil
}

func (m *Manager) writeMeta(w *Workspace) error {
	b, err := json.MarshalIndent(w, "", "  ")
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot encode the workspace metadata")
	}
	if err := config.WriteFileAtomic(m.metaPath(w.ID), append(b, '\n'), 0o600); err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot write the workspace metadata")
	}
	return nil
}

// replaceFile writes data to path through a temporary file and a rename,
// without fsync: readers see the old or the new content, and a crash may
// lose the latest version. It is for records whose loss costs little (a
// lease renewal, a run's evidence) and that sit on the hot path of every
// call, where an fsync on a slow disk would cost more than the call.
func replaceFile(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	name := f.Name()
	_, werr := f.Write(data)
	cerr := f.Chmod(perm)
	if err := errors.Join(werr, cerr, f.Close()); err != nil {
		os.Remove(name)
		return err
	}
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		return err
	}
	return nil
}

// Get returns a workspace's metadata.
func (m *Manager) Get(id string) (*Workspace, error) { return m.readMeta(id) }

// List returns every workspace in the store, oldest first. Entries whose
// metadata cannot be read are left out (Reconcile deals with them).
func (m *Manager) List() ([]Workspace, error) {
	ents, err := os.ReadDir(m.root)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot list workspaces")
	}
	var out []Workspace
	for _, e := range ents {
		if !e.IsDir() || !proposal.ValidID(e.Name()) {
			continue
		}
		w, err := m.readMeta(e.Name())
		if err != nil {
			continue
		}
		out = append(out, *w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, nil
}

// lockWS takes the workspace's lock without waiting: a second operation
// gets ErrLocked instead of interleaving with the first. Shared locks let
// reads run side by side; anything that changes the tree, the repository
// or the metadata takes it exclusively. The lock is an flock on a file in
// the workspace directory, so it also holds between processes.
func (m *Manager) lockWS(id string, exclusive bool) (func(), error) {
	if !proposal.ValidID(id) {
		return nil, ErrInvalidID
	}
	f, err := os.OpenFile(filepath.Join(m.dir(id), "lock"), os.O_RDWR|noFollowFlag, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot open the workspace lock")
	}
	fd := int(f.Fd())
	if err := tryLock(fd, exclusive); err != nil {
		f.Close()
		if errors.Is(err, errWouldBlock) {
			return nil, ErrLocked
		}
		return nil, errcode.Wrap(errcode.Internal, err, "cannot lock the workspace")
	}
	return func() {
		unlockFD(fd)
		f.Close()
	}, nil
}

// open locks a workspace and loads its metadata. needReady refuses
// workspaces that take no more changes.
func (m *Manager) open(id string, exclusive, needReady bool) (*Workspace, func(), error) {
	unlock, err := m.lockWS(id, exclusive)
	if err != nil {
		return nil, nil, err
	}
	w, err := m.readMeta(id)
	if err != nil {
		unlock()
		return nil, nil, err
	}
	if w.State == StateCreating || w.State == StateDestroying || (needReady && w.State != StateReady) {
		unlock()
		if w.State == StateCreating || w.State == StateDestroying {
			return nil, nil, ErrNotFound
		}
		return nil, nil, ErrNotReady
	}
	return w, unlock, nil
}

// openForUse is open for a read or an edit of the workspace: done also
// renews the lease (at most every touchInterval) before it unlocks.
func (m *Manager) openForUse(id string, exclusive, needReady bool) (w *Workspace, done func(), err error) {
	w, unlock, err := m.open(id, exclusive, needReady)
	if err != nil {
		return nil, nil, err
	}
	return w, func() {
		m.touch(w, false)
		unlock()
	}, nil
}

// touchInterval bounds how often a read renews the lease on disk.
const touchInterval = time.Minute

// touch renews the lease. Callers hold the exclusive lock, or a shared one
// (then only the metadata file is replaced, atomically).
func (m *Manager) touch(w *Workspace, force bool) {
	now := m.now()
	if !force && now.Sub(w.LastUsedAt) < touchInterval {
		return
	}
	w.LastUsedAt = now
	b, err := json.MarshalIndent(w, "", "  ")
	if err == nil {
		err = replaceFile(m.metaPath(w.ID), append(b, '\n'), 0o600)
	}
	if err != nil {
		m.log.Warn("workspace: cannot renew lease", "workspace", w.ID, "err", err)
	}
}

// Renew sets a new idle lease for a workspace and restarts it now.
func (m *Manager) Renew(id string, lease time.Duration) (*Workspace, error) {
	if lease <= 0 || lease > 7*24*time.Hour {
		return nil, errcode.New(errcode.InvalidArgument, "lease must be between 1ns and 168h")
	}
	w, unlock, err := m.open(id, true, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	w.Lease = lease
	w.LastUsedAt = m.now()
	if err := m.writeMeta(w); err != nil {
		return nil, err
	}
	return w, nil
}

// Stamp summarises the store as it is on disk: every workspace's metadata
// and run records, by name, size and modification time. Two equal stamps
// mean nothing a screen shows has changed, so a watcher (the app, for the
// runs sidecars make) can tell a change without reading every record.
// It reads directories only, never the records themselves.
func (m *Manager) Stamp() (string, error) {
	ents, err := os.ReadDir(m.root)
	if err != nil {
		return "", errcode.Wrap(errcode.Internal, err, "cannot list workspaces")
	}
	h := sha256.New()
	stat := func(name string) {
		if st, err := os.Stat(name); err == nil {
			fmt.Fprintf(h, "%s %d %d\n", filepath.Base(name), st.Size(), st.ModTime().UnixNano())
		}
	}
	for _, e := range ents {
		if !e.IsDir() || !proposal.ValidID(e.Name()) {
			continue
		}
		fmt.Fprintf(h, "workspace %s\n", e.Name())
		stat(m.metaPath(e.Name()))
		runs, err := os.ReadDir(m.runsDir(e.Name()))
		if err != nil {
			continue
		}
		for _, r := range runs {
			if strings.HasSuffix(r.Name(), ".json") {
				stat(filepath.Join(m.runsDir(e.Name()), r.Name()))
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
