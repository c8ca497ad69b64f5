package sidecar

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

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
// (stdin and stdout are the protocol, untouched so far), the argument list
// and the process's start time, so the agent, the presence file and
// everything that watches the process see the same process; only its
// memory is the smaller binary's.
//
// Why the checks are enough: the serving binary is looked for only in the
// directory that holds this binary, after symlinks are resolved, and only
// when that directory is owned by this user or root and writable by no
// group or other user (no shared or sticky directory), so only this user
// or root can put a file there, and either could as well replace
// sluice-sidecar itself: the exec grants no one anything new. The file is
// opened without following a symlink and every check is made on that open
// file (a regular executable, owned by this user or root, writable by no
// group or other user, not this very binary); the exec then runs that open
// file (/proc/self/fd/N), not the name again, so nothing can be swapped in
// between. Anything else, or a failed exec, leaves this binary serving, as
// it did before the serving binary existed.
//
// The serving binary must also be the same build (buildIdentity): one left
// from an older install beside a newer sluice-sidecar would otherwise
// serve the old tools. The exec tells it which build sluice-sidecar is and
// where it is (handoffEnv); a serving binary of another build execs
// sluice-sidecar back with handoffEnv set to handoffRefused, and it then
// serves itself. A build with no build ID hands nothing off.
func execServing() {
	if v, ok := os.LookupEnv(handoffEnv); ok {
		// Neither value is for the processes this one starts.
		os.Unsetenv(handoffEnv)
		if v == handoffRefused {
			return
		}
	}
	id := buildIdentity()
	if id == "" {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return
	}
	fd, ok := openServingBinary(filepath.Dir(exe))
	if !ok {
		return
	}
	defer unix.Close(fd)
	// The same argument list, argv[0] included: the process's command line
	// stays what the agent started, and ServeStdio takes sluice-sidecar's
	// arguments as they are. syscall.Exec, not a bare execveat, for what
	// the runtime does around an exec (its lock against starting threads,
	// the file limit given back as it was at start); the path through
	// /proc/self/fd is the open file itself, as execveat(fd, "",
	// AT_EMPTY_PATH) is.
	env := append(os.Environ(), handoffEnv+"="+id+":"+exe)
	_ = syscall.Exec("/proc/self/fd/"+strconv.Itoa(fd), os.Args, env)
}

// openServingBinary opens ServingBinary in dir and returns the descriptor when
// the directory and the file pass execServing's checks. The descriptor is
// read-only (its first bytes are checked) and close-on-exec.
func openServingBinary(dir string) (int, bool) {
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, false
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if unix.Fstat(dfd, &st) != nil || !ownedAlone(&st) {
		return -1, false
	}
	// O_NOFOLLOW refuses a symlink; O_NONBLOCK keeps a FIFO from holding
	// the open.
	fd, err := unix.Openat(dfd, ServingBinary, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, false
	}
	var self unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o111 == 0 || !ownedAlone(&st) ||
		// A copy of this very binary under the serving name would exec
		// itself again and again.
		unix.Stat("/proc/self/exe", &self) != nil || self.Dev == st.Dev && self.Ino == st.Ino ||
		// Only a program the kernel runs itself: a script's interpreter
		// would be handed /proc/self/fd/N, which closed at the exec, and
		// the session would end where serving in process would have
		// served.
		!isELF(fd) {
		unix.Close(fd)
		return -1, false
	}
	return fd, true
}

// isELF says whether the file open at fd starts as an ELF program does.
func isELF(fd int) bool {
	var magic [4]byte
	n, err := unix.Pread(fd, magic[:], 0)
	return err == nil && n == len(magic) && string(magic[:]) == "\x7fELF"
}

// ownedAlone says whether st is owned by this user or root and writable by
// no group or other user.
func ownedAlone(st *unix.Stat_t) bool {
	return st.Mode&0o022 == 0 && (int(st.Uid) == os.Geteuid() || st.Uid == 0)
}

// acceptHandoff is the serving binary's side of execServing: it says
// whether this process may serve. Started by sluice-sidecar of another
// build, it execs that sluice-sidecar back (which then serves itself) and
// returns false only if that fails: sluice-sidecar was removed or moved
// between its start and now (an install in progress). It does not serve
// then: it is not the build sluice-sidecar was, and the agent, started
// again once the install is done, gets the right one.
func acceptHandoff(stderr io.Writer) bool {
	v, ok := os.LookupEnv(handoffEnv)
	if !ok {
		return true // started directly, not by sluice-sidecar
	}
	os.Unsetenv(handoffEnv)
	want, from, _ := strings.Cut(v, ":")
	if id := buildIdentity(); id != "" && want == id {
		// The exec through /proc/self/fd named the process after the
		// descriptor's number; name it after this binary, as an exec by
		// its path would have (the kernel keeps 15 bytes).
		nameThreads(ServingBinary)
		return true
	}
	fmt.Fprintf(stderr, "sluice-sidecar: %s beside it is of another build; sluice-sidecar serves itself (install both from one build: make build)\n", ServingBinary)
	err := syscall.Exec(from, os.Args, append(os.Environ(), handoffEnv+"="+handoffRefused))
	fmt.Fprintf(stderr, "sluice-sidecar: cannot exec %s back (%v): not serving; start the agent again once sluice-sidecar is installed\n", from, err)
	return false
}

// nameThreads names this process and each of its threads (top -H and ps
// -L list threads by their own names) name, as the kernel keeps it (15
// bytes). A thread started later takes the name of the thread starting it,
// so one started from a thread not yet renamed while a pass ran is caught
// by the next pass, which finds every name right once none is starting.
func nameThreads(name string) {
	if len(name) > 15 {
		name = name[:15]
	}
	for range 8 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return
		}
		renamed := false
		for _, t := range tasks {
			comm := "/proc/self/task/" + t.Name() + "/comm"
			if b, err := os.ReadFile(comm); err == nil && strings.TrimSuffix(string(b), "\n") == name {
				continue
			}
			_ = os.WriteFile(comm, []byte(name), 0)
			renamed = true
		}
		if !renamed {
			return
		}
	}
}
