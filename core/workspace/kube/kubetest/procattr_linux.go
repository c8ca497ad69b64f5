package kubetest

import "syscall"

// procAttr makes a started process die with the test binary even when it
// is killed before Main can stop it (a panic, a -timeout).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
