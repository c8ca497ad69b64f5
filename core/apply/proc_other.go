//go:build !unix

package apply

import (
	"os"
	"os/exec"
)

func setProcessGroup(*exec.Cmd) {}

func killProcessGroup(p *os.Process) {
	if p != nil {
		_ = p.Kill()
	}
}
