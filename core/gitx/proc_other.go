//go:build !unix

package gitx

import (
	"io/fs"
	"os"
	"os/exec"
)

const gitExe = "git.exe"

// defaultPath: no fallback where there is no conventional location.
const defaultPath = ""

// SetProcessGroup has no process-group equivalent here; the leader is
// killed (KillProcessGroup) and exec's WaitDelay bounds the pipes held by
// children.
func SetProcessGroup(c *exec.Cmd) {}

// KillProcessGroup kills p.
func KillProcessGroup(p *os.Process) {
	if p != nil {
		_ = p.Kill()
	}
}

func isExecutable(st fs.FileInfo) bool { return st.Mode().IsRegular() }

func fileID(st fs.FileInfo) any { return nil }
