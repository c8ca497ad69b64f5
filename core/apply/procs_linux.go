//go:build linux

package apply

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/gitx"
)

// gitsIn lists the live git processes that work in any of dirs: their
// current directory is inside one, their command line names a path inside
// one (git -C, --git-dir), or their environment does (GIT_DIR,
// GIT_WORK_TREE, GIT_COMMON_DIR). It reads /proc; a process whose details
// cannot be read (another user's) does not work in the person's
// repository. Processes that are not git (a hook that outlived the git
// that ran it) hold none of git's locks. Without /proc nothing can be
// told, and known is false.
func gitsIn(dirs []string) (procs []gitProc, known bool) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, false
	}
	self := os.Getpid()
	// While no git of this process starts, so that each one seen running
	// is known to be this process's.
	gitx.OwnDuring(func(started func(int) (time.Time, bool)) {
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == self {
				continue
			}
			if pgid, ok := procGitIn("/proc/"+e.Name(), dirs); ok {
				at, own := started(pgid)
				procs = append(procs, gitProc{own: own, startedAt: at})
			}
		}
	})
	return procs, true
}

// procGitIn reports whether the process at proc is a live git working in
// dirs, and its process group.
func procGitIn(proc string, dirs []string) (int, bool) {
	stat, err := os.ReadFile(proc + "/stat")
	if err != nil {
		return 0, false
	}
	// The state, the parent and the process group follow the command name
	// in parentheses, which may itself hold ")" and spaces.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
		return 0, false
	}
	pgid, err := strconv.Atoi(f[2])
	if err != nil {
		return 0, false
	}
	cmdline, err := os.ReadFile(proc + "/cmdline")
	if err != nil || len(cmdline) == 0 {
		return 0, false
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if !isGit(args[0]) {
		exe, err := os.Readlink(proc + "/exe")
		if err != nil || !isGit(exe) {
			return 0, false
		}
	}
	var env []string
	if b, err := os.ReadFile(proc + "/environ"); err == nil {
		env = strings.Split(string(b), "\x00")
	}
	// Sluice's own reads (the sidecar's, the app's previews) take no lock.
	if slices.Contains(env, gitx.ReadMarker) {
		return 0, false
	}
	cwd, err := os.Readlink(proc + "/cwd")
	if err == nil && inAny(cwd, dirs) {
		return pgid, true
	}
	// A git pointed at the repository from elsewhere by its environment.
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if v == "" || (k != "GIT_DIR" && k != "GIT_WORK_TREE" && k != "GIT_COMMON_DIR") {
			continue
		}
		if !filepath.IsAbs(v) {
			if cwd == "" {
				continue
			}
			v = filepath.Join(cwd, v)
		}
		if inAny(filepath.Clean(v), dirs) {
			return pgid, true
		}
	}
	for _, a := range args[1:] {
		if _, v, ok := strings.Cut(a, "="); ok && filepath.IsAbs(v) {
			a = v
		}
		if filepath.IsAbs(a) && inAny(filepath.Clean(a), dirs) {
			return pgid, true
		}
	}
	return 0, false
}

// isGit: git itself or one of its programs (git-remote-https,
// git-upload-pack).
func isGit(arg0 string) bool {
	b := filepath.Base(arg0)
	return b == "git" || strings.HasPrefix(b, "git-")
}

func inAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, d+string(filepath.Separator)) {
			return true
		}
	}
	return false
}
