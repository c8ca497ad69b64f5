//go:build unix

package sidecar

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ServingBinary is the name of the binary that serves MCP over stdio and
// nothing else (sidecar/cmd/sluice-sidecar-stdio), installed beside
// sluice-sidecar.
const ServingBinary = "sluice-sidecar-stdio"

// execServing replaces this process with ServingBinary when it sits beside
// this executable and may be trusted as much as this executable is; it
// returns only when it does not (then this binary serves in process).
//
// An agent starts sluice-sidecar and keeps it for its whole session, idle
// most of the time. On Linux a Go binary's code and read-only data become
// resident nearly whole as soon as its package inits run, so what an idle
// sidecar holds follows what is linked: the other commands (the HTTP
// server, sessions, pods, client configuration, doctor) are linked here
// and never run by a stdio session. execve keeps the pid, the descriptors
// (stdin and stdout are the protocol, untouched so far), the environment,
// the argument list and the process's start time, so the agent, the
// presence file and everything that watches the process see the same
// process; only its memory is the smaller binary's.
//
// Why the checks are enough: the serving binary is looked for only in the
// directory that holds this binary, after symlinks are resolved, so whoever
// could put a file there could as well replace sluice-sidecar itself; the
// exec grants no one anything new. It must be a regular file, not a
// symlink out of that directory, owned by this user or by root (as an
// installed binary is), and writable by no group or other user, so no
// other account can have written it or can rewrite it. Anything else, or
// a failed exec, leaves this binary serving, as it did before the serving
// binary existed.
//
// The serving binary must also be the same build: one left from an older
// install beside a newer sluice-sidecar would otherwise serve the old
// tools. The exec tells it which build sluice-sidecar is and where it is
// (handoffEnv); a serving binary of another build execs sluice-sidecar
// back with handoffEnv set to handoffRefused, and it then serves itself.
func execServing() {
	if v, ok := os.LookupEnv(handoffEnv); ok {
		// Neither value is for the processes this one starts.
		os.Unsetenv(handoffEnv)
		if v == handoffRefused {
			return
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return
	}
	path := filepath.Join(filepath.Dir(exe), ServingBinary)
	st, err := os.Lstat(path)
	if err != nil || !trustedServing(st) {
		return
	}
	// A copy of this very binary under the serving name would exec itself
	// again and again.
	if self, err := os.Stat(exe); err != nil || os.SameFile(self, st) {
		return
	}
	// The same argument list, argv[0] included: the process's command line
	// stays what the agent started, and ServeStdio takes sluice-sidecar's
	// arguments as they are.
	env := append(os.Environ(), handoffEnv+"="+buildIdentity()+":"+exe)
	_ = syscall.Exec(path, os.Args, env)
}

// acceptHandoff is the serving binary's side of execServing: it says
// whether this process may serve. Started by sluice-sidecar of another
// build, it execs that sluice-sidecar back (which then serves itself) and
// returns false only if that fails.
func acceptHandoff(stderr io.Writer) bool {
	v, ok := os.LookupEnv(handoffEnv)
	if !ok {
		return true // started directly, not by sluice-sidecar
	}
	os.Unsetenv(handoffEnv)
	want, from, _ := strings.Cut(v, ":")
	if want == buildIdentity() {
		return true
	}
	fmt.Fprintf(stderr, "sluice-sidecar: %s beside it is of another build; sluice-sidecar serves itself (install both from one build: make build)\n", ServingBinary)
	err := syscall.Exec(from, os.Args, append(os.Environ(), handoffEnv+"="+handoffRefused))
	fmt.Fprintln(stderr, "sluice-sidecar:", from, err)
	return false
}

// trustedServing says whether st is a file execServing may run: a regular
// executable file owned by this user or root that no group or other user
// may write.
func trustedServing(st os.FileInfo) bool {
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 || st.Mode().Perm()&0o022 != 0 {
		return false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	return int(sys.Uid) == os.Geteuid() || sys.Uid == 0
}
