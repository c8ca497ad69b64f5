//go:build linux

package gitx

import (
	"os/exec"
	"syscall"
	"testing"
)

// TestSetProcessGroup_DiesWithParent pins what every git Sluice starts gets
// on Linux: its own process group, and death with the process that started
// it (core/apply's crash tests show the second with a real SIGKILL).
func TestSetProcessGroup_DiesWithParent(t *testing.T) {
	c := exec.Command("git", "--version")
	SetProcessGroup(c)
	if a := c.SysProcAttr; a == nil || !a.Setpgid || a.Pdeathsig != syscall.SIGKILL {
		t.Fatalf("SysProcAttr %+v: want Setpgid and Pdeathsig=SIGKILL", a)
	}
	if err := c.Run(); err != nil {
		t.Fatalf("git with these attributes: %v", err)
	}
}
