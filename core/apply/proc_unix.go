//go:build unix

package apply

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup puts git in its own process group so that a timeout
// stops every child it started (a hook, a signing program, a transport).
func setProcessGroup(c *exec.Cmd) {
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killProcessGroup(p *os.Process) {
	if p == nil {
		return
	}
	if err := syscall.Kill(-p.Pid, syscall.SIGKILL); err != nil {
		_ = p.Kill()
	}
}
