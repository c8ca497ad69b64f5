package gitx

import (
	"os"
	"path/filepath"
	"sync"
	"time"
)

// openCacheTTL bounds how long an opened repository is reused. Within it,
// reuse also requires that none of the files that decided the repository's
// location or configuration changed: .git, HEAD (conditional includes
// depend on the branch), every config file read and every include target.
// Reuse saves two git processes per call, which is most of the overhead of
// a small read.
const openCacheTTL = 30 * time.Second

type stamp struct {
	path   string
	exists bool
	size   int64
	mtime  time.Time
	sys    any
}

func statStamp(p string) stamp {
	st, err := os.Lstat(p)
	if err != nil {
		return stamp{path: p}
	}
	if st.IsDir() {
		// A directory's identity is what matters (was it replaced?); its
		// mtime moves with every file created in it.
		return stamp{path: p, exists: true, sys: fileID(st)}
	}
	return stamp{path: p, exists: true, size: st.Size(), mtime: st.ModTime(), sys: fileID(st)}
}

func (s stamp) same(o stamp) bool {
	return s.exists == o.exists && s.size == o.size && s.mtime.Equal(o.mtime) && s.sys == o.sys
}

// stampFiles records the state of everything that decided this open.
func (repo *Repo) stampFiles(canon string) []stamp {
	paths := []string{canon, repo.Root, repo.GitDir, filepath.Join(repo.GitDir, "HEAD"), filepath.Join(repo.GitDir, "config.worktree"),
		filepath.Join(repo.CommonDir, "config"), filepath.Join(repo.CommonDir, "objects"), filepath.Join(repo.CommonDir, "objects", "info", "alternates")}
	if !repo.Bare {
		paths = append(paths, filepath.Join(repo.Root, ".git"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		paths = append(paths, filepath.Join(home, ".gitconfig"), filepath.Join(home, ".config", "git", "config"))
	}
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		paths = append(paths, filepath.Join(x, "git", "config"))
	}
	paths = append(paths, repo.configFiles...)
	out := make([]stamp, len(paths))
	for i, p := range paths {
		out[i] = statStamp(p)
	}
	return out
}

type cacheEntry struct {
	repo *Repo
	at   time.Time
}

type openCache struct {
	mu sync.Mutex
	m  map[string]cacheEntry
}

func (c *openCache) get(key string) *Repo {
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if !ok || time.Since(e.at) > openCacheTTL {
		return nil
	}
	for _, s := range e.repo.stamps {
		if !s.same(statStamp(s.path)) {
			c.mu.Lock()
			delete(c.m, key)
			c.mu.Unlock()
			return nil
		}
	}
	return e.repo
}

func (c *openCache) put(key string, repo *Repo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]cacheEntry{}
	}
	if len(c.m) >= 256 {
		// Fleet scans can open many repositories: drop what expired, and
		// everything if that was not enough.
		for k, e := range c.m {
			if time.Since(e.at) > openCacheTTL {
				delete(c.m, k)
			}
		}
		if len(c.m) >= 256 {
			clear(c.m)
		}
	}
	c.m[key] = cacheEntry{repo: repo, at: time.Now()}
}
