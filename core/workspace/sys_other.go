//go:build !unix

package workspace

import (
	"context"
	"errors"
	"os"
)

// Workspaces need Unix file descriptor semantics (openat, flock) and a
// local container engine; elsewhere every entry point answers
// ErrUnsupportedOS, and Open refuses to start.

const (
	sysSupported = false
	noFollowFlag = 0
)

var errWouldBlock = errors.New("would block")

func (o owner) apply(fd int) error                             { return ErrUnsupportedOS }
func tryLock(fd int, exclusive bool) error                     { return ErrUnsupportedOS }
func unlockFD(fd int)                                          {}
func chownTree(root string, uid, gid int) error                { return ErrUnsupportedOS }
func (m *Manager) readReport(string, []string) ([]byte, error) { return nil, ErrUnsupportedOS }

func (m *Manager) copySnapshot(src, tree string) (int64, int64, []Skipped, error) {
	return 0, 0, nil, ErrUnsupportedOS
}

// ReadFile is not supported on this operating system.
func (m *Manager) ReadFile(ctx context.Context, id, p string, opt ReadOptions) (*FileContent, error) {
	return nil, ErrUnsupportedOS
}

// WriteFile is not supported on this operating system.
func (m *Manager) WriteFile(ctx context.Context, id, p string, content []byte, perm os.FileMode) (*WriteResult, error) {
	return nil, ErrUnsupportedOS
}

// EditFile is not supported on this operating system.
func (m *Manager) EditFile(ctx context.Context, id string, req EditRequest) (*WriteResult, error) {
	return nil, ErrUnsupportedOS
}

// ListFiles is not supported on this operating system.
func (m *Manager) ListFiles(ctx context.Context, id, dir string, opt ListOptions) (*Listing, error) {
	return nil, ErrUnsupportedOS
}

// Glob is not supported on this operating system.
func (m *Manager) Glob(ctx context.Context, id, pattern string, maxEntries int) (*Listing, error) {
	return nil, ErrUnsupportedOS
}

// Grep is not supported on this operating system.
func (m *Manager) Grep(ctx context.Context, id string, req GrepRequest) (*GrepResult, error) {
	return nil, ErrUnsupportedOS
}
