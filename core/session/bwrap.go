package session

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/term"

	"github.com/sluicehq/sluice/core/errcode"
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
// the launcher, and starts with a session keyring of its own, empty.
//
// A sandbox whose set-up lost a race with the host's mounts
// (LostMountRace) is made again; nothing of the agent ran in it. One that
// ended in its set-up for any other reason is an error that says what
// bwrap printed.
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
	if err := homeMountPoints(spec, append(shown(spec), spec.Session.Repo)); err != nil {
		return nil, err
	}
	// bwrap writes the sandbox's first process id to fd 3; sandbox-init
	// says on fd 4 (StartedFD) that it runs.
	args = append([]string{"--info-fd", "3"}, args...)
	for attempt := 1; ; attempt++ {
		p, early, err := startBwrap(path, args, spec.Env, stdio)
		if err != nil || p != nil {
			return p, err
		}
		if LostMountRace(early) && attempt < bwrapAttempts {
			continue
		}
		return nil, &errcode.Error{Code: errcode.Unsupported,
			Msg: "the session's sandbox could not be made: " + strings.TrimSpace(string(early))}
	}
}

// startBwrap makes one sandbox. It returns the process once sandbox-init
// runs in it, or what bwrap printed when it ended before that.
func startBwrap(path string, args, env []string, stdio Stdio) (*bwrapProcess, []byte, error) {
	info, infoW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	defer info.Close()
	ran, err := NewStarted()
	if err != nil {
		infoW.Close()
		return nil, nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.ExtraFiles = []*os.File{infoW, ran.File()}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	p := &bwrapProcess{cmd: cmd, stdin: stdio.In, restore: func() {}, done: make(chan struct{})}
	var pts *os.File
	// What bwrap says before the sandbox runs is held, to be shown only
	// when it ended there for good.
	var held *heldWriter
	if stdio.In != nil && term.IsTerminal(int(stdio.In.Fd())) {
		if p.ptmx, pts, err = pty.Open(); err != nil {
			infoW.Close()
			ran.Close()
			return nil, nil, err
		}
		p.Resize()
		cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, pts
	} else {
		held = &heldWriter{w: stdio.Err}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.In, stdio.Out, held
		if stdio.Out == stdio.Err {
			cmd.Stdout = held
		}
	}
	started, exited := make(chan error, 1), make(chan error, 1)
	go func() {
		// bwrap is started from a thread of its own that first leaves
		// the person's session keyring: bwrap and all in the sandbox
		// inherit the new, empty one (sandbox-init's threads included).
		// The thread stays until bwrap ends (it is bwrap's parent for
		// Pdeathsig), and it is never unlocked, so it ends with this
		// goroutine instead of going back to the launcher's others.
		runtime.LockOSThread()
		err := LeaveSessionKeyring()
		if err == nil {
			err = cmd.Start()
		}
		started <- err
		if err == nil {
			exited <- cmd.Wait()
		}
	}()
	err = <-started
	infoW.Close()
	if pts != nil {
		pts.Close()
	}
	if err != nil {
		ran.Close()
		if p.ptmx != nil {
			p.ptmx.Close()
		}
		return nil, nil, err
	}
	if !ran.Wait() {
		<-exited
		var early []byte
		if p.ptmx != nil {
			// bwrap and its sandbox are gone, so the terminal gives what
			// they wrote, then EIO.
			early, _ = io.ReadAll(io.LimitReader(p.ptmx, 1<<16))
			p.ptmx.Close()
		} else {
			early = held.heldOutput()
		}
		return nil, early, nil
	}
	if held != nil {
		held.release()
	}
	// drained is closed once all the agent wrote to its terminal has
	// been copied out: the copy ends (EIO) when the last descriptor of the
	// terminal in the sandbox is closed, which is after the agent's last
	// write, and at the latest when the sandbox's processes are gone.
	var drained chan struct{}
	if p.ptmx != nil {
		if old, err := term.MakeRaw(int(stdio.In.Fd())); err == nil {
			p.restore = func() { term.Restore(int(stdio.In.Fd()), old) }
		}
		drained = make(chan struct{})
		go io.Copy(p.ptmx, stdio.In)
		go func() {
			io.Copy(stdio.Out, p.ptmx)
			close(drained)
		}()
	}
	var st struct {
		ChildPID int `json:"child-pid"`
	}
	if json.NewDecoder(info).Decode(&st) == nil {
		p.child = st.ChildPID
	}
	go func() {
		p.code, p.err = exitCode(<-exited)
		if drained != nil {
			<-drained
		}
		p.restore()
		if p.ptmx != nil {
			p.ptmx.Close()
		}
		close(p.done)
	}()
	return p, nil, nil
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
