//go:build !unix

package gitx

import (
	"io/fs"
	"os"
	"os/exec"
)

const gitExe = "git.exe"

// setProcessGroup has no process-group equivalent here; the leader is
// killed and exec's WaitDelay bounds the pipes held by children.
func setProcessGroup(c *exec.Cmd) {}

func killProcessGroup(p *os.Process) {
	if p != nil {
		_ = p.Kill()
	}
}

func isExecutable(st fs.FileInfo) bool { return st.Mode().IsRegular() }

func fileID(st fs.FileInfo) any { return nil }
