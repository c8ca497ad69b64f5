package app

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
)

// loginCommand is `sluice login` as the person can type it in a terminal
// on this machine: the name this binary was started by, when the shell
// finds that same file by that name on PATH; else its full path (a build
// folder, an install in a directory not on PATH, a binary renamed to
// sluice-headless). The login page, `sluice serve` and the message of a
// second start all print it, so that copying it works.
var loginCommand = sync.OnceValue(func() string { return commandFor("login") })

// commandFor is this binary with sub as the person can type it.
func commandFor(sub string) string {
	exe, err := os.Executable()
	if err != nil {
		return "sluice " + sub
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	self, err := os.Stat(exe)
	if err != nil {
		return "sluice " + sub
	}
	// The name it was typed as first (a "sluice" link to the binary), then
	// the binary's own name.
	names := []string{exe}
	if len(os.Args) > 0 {
		names = []string{os.Args[0], exe}
	}
	for _, n := range names {
		name := filepath.Base(n)
		found, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		if st, err := os.Stat(found); err == nil && os.SameFile(st, self) {
			return shellWord(strings.TrimSuffix(name, ".exe")) + " " + sub
		}
	}
	return shellWord(exe) + " " + sub
}

// plainWord is a word no shell reads differently.
var plainWord = regexp.MustCompile(`^[A-Za-z0-9_./:@+-]+$`)

// shellWord quotes s for the person's shell when it needs it.
func shellWord(s string) string {
	if plainWord.MatchString(s) {
		return s
	}
	if runtime.GOOS == "windows" {
		return `"` + s + `"`
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
