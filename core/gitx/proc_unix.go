//go:build unix

package gitx

import (
	"io/fs"
	"os"
	"os/exec"
	"syscall"
)

const gitExe = "git"

// defaultPath is searched when PATH is unset or empty, as a shell would
// (execvp's default): an agent may start the sidecar with an environment
// emptied of everything, PATH included.
const defaultPath = "/usr/local/bin:/usr/bin:/bin"

// SetProcessGroup puts a git process in a new process group so that a
// kill (KillProcessGroup) reaches every child it started (a filter, hook
// or helper, a submodule's git) and none survives it; on Linux git is also
// killed when Sluice itself dies (see dieWithParent).
func SetProcessGroup(c *exec.Cmd) {
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(c.SysProcAttr)
	// exec's own cancellation would kill only the leader.
	c.Cancel = nil
}

// KillProcessGroup kills the process group p leads.
func KillProcessGroup(p *os.Process) {
	if p == nil {
		return
	}
	// Negative pid: the whole group. Fall back to the leader if the group
	// is already gone.
	if err := syscall.Kill(-p.Pid, syscall.SIGKILL); err != nil {
		_ = p.Kill()
	}
}

func isExecutable(st fs.FileInfo) bool { return st.Mode().Perm()&0o111 != 0 }

// fileID identifies a file across renames and replacements.
func fileID(st fs.FileInfo) any {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return [2]uint64{uint64(s.Dev), uint64(s.Ino)}
	}
	return nil
}
