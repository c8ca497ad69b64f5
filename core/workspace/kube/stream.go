package kube

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/url"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/sluicehq/sluice/core/errcode"
)

// execIn runs cmd in a container of the run's pod, streaming stdin to it
// and its stdout to stdout (either may be nil). Its stderr is kept (its
// first 4 KiB) for the error. A non-zero exit is an error carrying the
// code.
func (r *Runtime) execIn(ctx context.Context, pod, container string, cmd []string, stdin io.Reader, stdout io.Writer) error {
	req := r.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(r.opt.Namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdin: stdin != nil, Stdout: stdout != nil, Stderr: true}, scheme.ParameterCodec)
	ex, err := r.newExecutor(req.URL())
	if err != nil {
		return err
	}
	stderr := &limitBuffer{max: 4 << 10}
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
	if err == nil {
		return nil
	}
	var ce utilexec.CodeExitError
	if errors.As(err, &ce) {
		return &execError{cmd: strings.Join(cmd, " "), code: ce.Code, stderr: stderr.String()}
	}
	return apiError(streamCause(err), "create", "pods/exec", pod)
}

// attachRun attaches to the run container's stdin, stdout and stderr.
func (r *Runtime) attachRun(ctx context.Context, pod string, stdin io.Reader, stdout, stderr io.Writer) error {
	req := r.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(r.opt.Namespace).Name(pod).SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Container: containerRun, Stdin: true, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := r.newExecutor(req.URL())
	if err != nil {
		return err
	}
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr}); err != nil {
		return apiError(streamCause(err), "create", "pods/attach", pod)
	}
	return nil
}

// newExecutor streams to a pod's exec or attach subresource over
// WebSocket (the API server's current protocol), falling back to SPDY for
// an API server or proxy that cannot upgrade to it.
func (r *Runtime) newExecutor(u *url.URL) (remotecommand.Executor, error) {
	ws, err := remotecommand.NewWebSocketExecutor(r.cfg, "GET", u.String())
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot stream to the run's pod")
	}
	spdy, err := remotecommand.NewSPDYExecutor(r.cfg, "POST", u)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot stream to the run's pod")
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		// A server that answered with a Status refused the stream itself
		// (forbidden, not found): SPDY would be refused the same way, and
		// less clearly.
		var st apierrors.APIStatus
		if errors.As(streamCause(err), &st) {
			return false
		}
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// streamCause is the cause of a failed stream upgrade (a StatusError
// when the API server answered), or err.
func streamCause(err error) error {
	var uf *httpstream.UpgradeFailureError
	if errors.As(err, &uf) && uf.Cause != nil {
		return uf.Cause
	}
	return err
}

// execError is a command exec'd in the pod that exited non-zero.
type execError struct {
	cmd    string
	code   int
	stderr string
}

func (e *execError) Error() string {
	return "`" + e.cmd + "` in the run's pod exited " + strconv.Itoa(e.code) + ": " + strings.TrimSpace(e.stderr)
}

// limitBuffer keeps the first max bytes written to it and discards the
// rest, never failing a write.
type limitBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *limitBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (b *limitBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// stopWriter passes output on until the writer fails once; then it
// records the error, signals stop and swallows the rest, so the stream
// keeps draining while the run is killed (a stream that stalls on a
// failed write would also stall the kill).
type stopWriter struct {
	w    io.Writer
	once *sync.Once
	stop chan struct{}
	mu   sync.Mutex
	err  error
}

func (s *stopWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return len(p), nil
	}
	if _, err := s.w.Write(p); err != nil {
		s.err = err
		s.once.Do(func() { close(s.stop) })
	}
	return len(p), nil
}

func (s *stopWriter) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
