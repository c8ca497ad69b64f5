package session

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"sync"

	"golang.org/x/sys/unix"
)

// StartedFD is the descriptor on which the first program of a sandbox
// bwrap makes (sandbox-init, the session's sidecar) says with one byte
// that it runs: bwrap's set-up is over. Until then nothing of the agent
// or the sidecar ran, and a sandbox whose set-up failed may be made
// again; after it, never.
const StartedFD = 4

// bwrapAttempts is how many times a sandbox is made while its set-up
// loses the race LostMountRace names.
const bwrapAttempts = 5

// LostMountRace reports whether out, what bwrap printed before its
// sandbox ran anything, says that its set-up lost a race with the host's
// mounts. bwrap binds "/" into the sandbox recursively, reads the mount
// table, then remounts each mount below with the sandbox's flags
// (read-only, nosuid, nodev); a mount the host takes away in between (a
// container's overlay as Docker removes the container, a volume
// unmounted) fails its remount (EINVAL, ENOENT) and bwrap ends. Making
// the sandbox again reads the mount table again.
func LostMountRace(out []byte) bool {
	return bytes.Contains(out, []byte(`Unable to apply mount flags: remount "`))
}

// ProbeBubblewrap makes the sandbox every session's begins with (BaseArgs)
// around /bin/true, as `sluice doctor` and the tests check that bwrap
// works here, and returns what bwrap printed when it did not. A lost
// mount race (LostMountRace) is tried again: it says nothing of the host.
func ProbeBubblewrap(ctx context.Context, bwrap string) ([]byte, error) {
	for attempt := 1; ; attempt++ {
		out, err := exec.CommandContext(ctx, bwrap, append(BaseArgs(), "--", "/bin/true")...).CombinedOutput()
		if err == nil || !LostMountRace(out) || attempt == bwrapAttempts || ctx.Err() != nil {
			return out, err
		}
	}
}

// SayStarted writes the byte the launcher waits for on fd (StartedFD) and
// closes fd, so that nothing started later inherits it. It does so only
// when fd is a pipe: a program run without one (fd < 0, or fd not
// inherited and since taken by something of its own) leaves it be.
func SayStarted(fd int) {
	var st unix.Stat_t
	if fd < 0 || unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return
	}
	unix.Write(fd, []byte{1})
	unix.Close(fd)
}

// Started is the launcher's side of a StartedFD pipe.
type Started struct{ r, w *os.File }

// NewStarted makes the pipe.
func NewStarted() (*Started, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	return &Started{r: r, w: w}, nil
}

// File is the end the sandbox gets, at StartedFD among a command's
// descriptors.
func (s *Started) File() *os.File { return s.w }

// Wait, once the command is started (or failed to start), reads until the
// sandbox's first program said it runs (true) or every holder of the
// other end is gone without a word (false: bwrap ended in its set-up).
func (s *Started) Wait() bool {
	s.w.Close()
	defer s.r.Close()
	var b [1]byte
	n, _ := io.ReadFull(s.r, b[:])
	return n == 1
}

// Close releases both ends, for a command that never started.
func (s *Started) Close() {
	s.w.Close()
	s.r.Close()
}

// heldWriter holds what is written to it until release, then passes all
// on to w. Before a sandbox's first program runs only bwrap writes (a
// line about why it ended); the agent's first words may come between its
// byte on StartedFD and release, and wait here.
type heldWriter struct {
	mu   sync.Mutex
	w    io.Writer
	held bytes.Buffer
	open bool
}

func (h *heldWriter) Write(b []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.open {
		return h.held.Write(b)
	}
	if h.w == nil {
		return len(b), nil
	}
	return h.w.Write(b)
}

// release passes on what was held and all that follows.
func (h *heldWriter) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.open = true
	if h.w != nil && h.held.Len() > 0 {
		h.w.Write(h.held.Bytes())
	}
	h.held.Reset()
}

// heldOutput is what was held, for a sandbox that never ran.
func (h *heldWriter) heldOutput() []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return bytes.Clone(h.held.Bytes())
}
