//go:build unix

package workspace

import (
	"os"
	"runtime"
	"sync"
)

// chownTree gives every entry below (and including) root to uid:gid,
// symlinks themselves rather than their targets. It works on directory
// descriptors (one fchownat per entry, no path lookups) with a worker per
// CPU, because handing over a fresh checkout of tens of thousands of files
// is on the path of workspace_create.
func chownTree(root string, uid, gid int) error {
	fd, err := openDirPath(root)
	if err != nil {
		return err
	}
	if err := fchownFD(fd, uid, gid); err != nil {
		closeFD(fd)
		return err
	}
	var (
		mu      sync.Mutex
		cond    = sync.NewCond(&mu)
		queue   = []dirRef{{fd, root}}
		pending = 1 // directories queued or being processed
		first   error
	)
	workers := min(runtime.NumCPU(), 4)
	// A WaitGroup, not an errgroup: the first error is not one worker's
	// result but state every worker reads under mu, to queue no more
	// directories once the walk has failed.
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				mu.Lock()
				for len(queue) == 0 && pending > 0 {
					cond.Wait()
				}
				if pending == 0 {
					mu.Unlock()
					return
				}
				dir := queue[len(queue)-1]
				queue = queue[:len(queue)-1]
				mu.Unlock()

				subdirs, err := chownDirEntries(dir, uid, gid)
				closeFD(dir.fd)
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				if first == nil {
					queue = append(queue, subdirs...)
					pending += len(subdirs)
				} else {
					for _, d := range subdirs {
						closeFD(d.fd)
					}
				}
				pending--
				cond.Broadcast()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, d := range queue {
		closeFD(d.fd)
	}
	return first
}

type dirRef struct {
	fd   int
	path string
}

// chownDirEntries hands over the entries of one directory and returns its
// subdirectories, opened.
func chownDirEntries(dir dirRef, uid, gid int) ([]dirRef, error) {
	dup, err := openChildDot(dir.fd)
	if err != nil {
		return nil, err
	}
	// The path only serves ReadDir's own lstat for file systems that do
	// not report entry types; every change goes through the descriptor.
	f := os.NewFile(uintptr(dup), dir.path)
	defer f.Close()
	var subdirs []dirRef
	for {
		ents, err := f.ReadDir(256)
		for _, e := range ents {
			name := e.Name()
			if err := lchownAt(dir.fd, name, uid, gid); err != nil {
				return subdirs, err
			}
			if e.IsDir() {
				sub, err := openChild(dir.fd, name, true)
				if err != nil {
					return subdirs, err
				}
				subdirs = append(subdirs, dirRef{sub, dir.path + "/" + name})
			}
		}
		if err != nil || len(ents) == 0 {
			break
		}
	}
	return subdirs, nil
}
