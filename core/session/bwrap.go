package session

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/term"
)

// signalGrace is how long an agent has to end after a signal the launcher
// passed on before its sandbox is ended outright.
const signalGrace = 10 * time.Second

// bwrapProcess is a sandbox bwrap runs.
type bwrapProcess struct {
	cmd   *exec.Cmd
	stdin *os.File
	// ptmx is the session's own terminal (nil without one); restore puts
	// the person's terminal back as it was.
	ptmx    *os.File
	restore func()
	// child is the sandbox's first process (sandbox-init), as the host
	// sees it, from bwrap's --info-fd.
	child int
	done  chan struct{}
	code  int
	err   error
}

// Start implements Runtime. With a terminal, the sandbox gets one of its
// own and the launcher copies between the two (raw mode, the person's
// window size): nothing in the sandbox holds the person's terminal, whose
// input a process could otherwise inject (TIOCSTI). The sandbox dies with
// the launcher.
func (b Bubblewrap) Start(spec *Spec, stdio Stdio) (Process, error) {
	path := b.Path
	if path == "" {
		var err error
		if path, err = FindBubblewrap(); err != nil {
			return nil, err
		}
	}
	args, err := AgentArgs(spec)
	if err != nil {
		return nil, err
	}
	info, infoW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer info.Close()
	// bwrap writes the sandbox's first process id to fd 3.
	cmd := exec.Command(path, append([]string{"--info-fd", "3"}, args...)...)
	cmd.Env = spec.Env
	cmd.ExtraFiles = []*os.File{infoW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	p := &bwrapProcess{cmd: cmd, stdin: stdio.In, restore: func() {}, done: make(chan struct{})}
	if stdio.In != nil && term.IsTerminal(int(stdio.In.Fd())) {
		ptmx, pts, err := pty.Open()
		if err != nil {
			infoW.Close()
			return nil, err
		}
		p.ptmx = ptmx
		p.Resize()
		cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, pts
		err = cmd.Start()
		pts.Close()
		if err != nil {
			ptmx.Close()
			infoW.Close()
			return nil, err
		}
		if old, err := term.MakeRaw(int(stdio.In.Fd())); err == nil {
			p.restore = func() { term.Restore(int(stdio.In.Fd()), old) }
		}
		go io.Copy(ptmx, stdio.In)
		go io.Copy(stdio.Out, ptmx)
	} else {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.In, stdio.Out, stdio.Err
		if err := cmd.Start(); err != nil {
			infoW.Close()
			return nil, err
		}
	}
	infoW.Close()
	var st struct {
		ChildPID int `json:"child-pid"`
	}
	if json.NewDecoder(info).Decode(&st) == nil {
		p.child = st.ChildPID
	}
	go func() {
		p.code, p.err = exitCode(cmd.Wait())
		p.restore()
		if p.ptmx != nil {
			p.ptmx.Close()
		}
		close(p.done)
	}()
	return p, nil
}

func (p *bwrapProcess) Wait() (int, error) {
	<-p.done
	return p.code, p.err
}

func (p *bwrapProcess) Signal(sig syscall.Signal) {
	if p.child <= 0 {
		p.cmd.Process.Kill()
		return
	}
	// sandbox-init passes it to the agent's process group.
	syscall.Kill(p.child, sig)
	go func() {
		select {
		case <-p.done:
		case <-time.After(signalGrace):
			p.cmd.Process.Kill()
		}
	}()
}

func (p *bwrapProcess) Resize() {
	if p.ptmx == nil || p.stdin == nil {
		return
	}
	if sz, err := pty.GetsizeFull(p.stdin); err == nil {
		pty.Setsize(p.ptmx, sz)
	}
}

// exitCode is a process's exit code as a shell says it.
func exitCode(err error) (int, error) {
	if err == nil {
		return 0, nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			return 128 + int(st.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	return 1, err
}
