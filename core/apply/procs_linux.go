//go:build linux

package apply

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/core/gitx"
)

// gitBusyIn reports whether a live git process works in any of dirs: its
// current directory is inside one, or its command line names a path inside
// one (git -C, --git-dir). It reads /proc; a process whose details cannot
// be read (another user's) does not work in the person's repository.
// Processes that are not git (a hook that outlived the git that ran it)
// hold none of git's locks.
func gitBusyIn(dirs []string) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		// Without /proc nothing can be told: assume git is busy, so that
		// no lock is taken for a leftover.
		return true
	}
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if procGitIn("/proc/"+e.Name(), dirs) {
			return true
		}
	}
	return false
}

func procGitIn(proc string, dirs []string) bool {
	stat, err := os.ReadFile(proc + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses, which may itself
	// hold ")" and spaces.
	if i := bytes.LastIndexByte(stat, ')'); i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' || stat[i+2] == 'X' {
		return false
	}
	cmdline, err := os.ReadFile(proc + "/cmdline")
	if err != nil || len(cmdline) == 0 {
		return false
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if !isGit(args[0]) {
		exe, err := os.Readlink(proc + "/exe")
		if err != nil || !isGit(exe) {
			return false
		}
	}
	// Sluice's own reads (the sidecar's, the app's previews) take no lock.
	if env, err := os.ReadFile(proc + "/environ"); err == nil && slices.Contains(strings.Split(string(env), "\x00"), gitx.ReadMarker) {
		return false
	}
	if cwd, err := os.Readlink(proc + "/cwd"); err == nil && inAny(cwd, dirs) {
		return true
	}
	for _, a := range args[1:] {
		if _, v, ok := strings.Cut(a, "="); ok && filepath.IsAbs(v) {
			a = v
		}
		if filepath.IsAbs(a) && inAny(filepath.Clean(a), dirs) {
			return true
		}
	}
	return false
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
