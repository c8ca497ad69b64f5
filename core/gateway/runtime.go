package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
	"github.com/sluicehq/sluice/core/workspace"
)

// Runtime is a workspace.Runtime that asks the app to run containers (the
// runtime routes): the sidecar's workspace Manager uses it, so the sidecar
// links no container client and the app decides which runtime runs them.
// A run's output comes back live, stdout and stderr apart; a writer that
// refuses more output (workspace.ErrStopOutput) and a cancelled context
// are sent to the app, which stops the run and removes its container, and
// Run returns only when the app says the run is over, as a local runtime
// would.
type Runtime struct {
	c    *Client
	name string
}

// agentKey carries the agent a run is made for.
type agentKey struct{}

// WithAgent is ctx for calls made on agent's behalf: the app runs only
// that agent's workspaces.
func WithAgent(ctx context.Context, agent string) context.Context {
	return context.WithValue(ctx, agentKey{}, agent)
}

func agentFrom(ctx context.Context) string {
	a, _ := ctx.Value(agentKey{}).(string)
	return a
}

// defaultRuntimeAgent speaks for store-wide calls made on nobody's behalf
// (a sweep of idle workspaces): the app does not look at it there.
const defaultRuntimeAgent = "sluice-sidecar"

// NewRuntime asks the app for its runtime; an app that cannot be reached
// or has none is an error, and nothing is remembered.
func NewRuntime(ctx context.Context, c *Client) (*Runtime, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var n RuntimeName
	if err := c.do(ctx, defaultRuntimeAgent, http.MethodGet, "/v1/runtime", nil, &n); err != nil {
		return nil, runtimeError(err)
	}
	return &Runtime{c: c, name: n.Name}, nil
}

// runtimeError is the app's own error for an answer (its code, message
// and data, as the app's runtime gave them), and a typed unavailability
// when no answer came.
func runtimeError(err error) error {
	var api *APIError
	if errors.As(err, &api) {
		return api.Unwrap()
	}
	if errors.Is(err, ErrUnavailable) {
		return &errcode.Error{Code: errcode.GatewayUnavailable,
			Msg: "the Sluice app cannot be reached: workspace runs go through it; start the app, then call this tool again", Err: err}
	}
	return err
}

func (rt *Runtime) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	agent := agentFrom(ctx)
	if agent == "" {
		agent = defaultRuntimeAgent
	}
	return runtimeError(rt.c.do(ctx, agent, method, path, body, out))
}

// Name implements workspace.Runtime: the app's runtime's name.
func (rt *Runtime) Name() string { return rt.name }

// CheckImage implements workspace.Runtime.
func (rt *Runtime) CheckImage(ctx context.Context, imageID string) error {
	return rt.call(ctx, http.MethodPost, "/v1/runtime/image-check", ImageCheck{ImageID: imageID}, nil)
}

// CheckRuntime implements workspace.Runtime.
func (rt *Runtime) CheckRuntime(ctx context.Context, name string) (workspace.RuntimeInfo, error) {
	var info workspace.RuntimeInfo
	err := rt.call(ctx, http.MethodPost, "/v1/runtime/oci-check", OCICheck{Name: name}, &info)
	return info, err
}

// Containers implements workspace.Runtime.
func (rt *Runtime) Containers(ctx context.Context, storeKey string) ([]workspace.ContainerInfo, error) {
	var list []workspace.ContainerInfo
	err := rt.call(ctx, http.MethodGet, "/v1/runtime/containers?store="+url.QueryEscape(storeKey), nil, &list)
	return list, err
}

// Remove implements workspace.Runtime. A container the app no longer has
// is removed already.
func (rt *Runtime) Remove(ctx context.Context, containerID string) error {
	err := rt.call(ctx, http.MethodDelete, "/v1/runtime/containers/"+url.PathEscape(containerID), nil, nil)
	if errcode.IsCode(err, errcode.NotFound) {
		return nil
	}
	return err
}

// EgressNetwork implements workspace.Runtime.
func (rt *Runtime) EgressNetwork(ctx context.Context) (workspace.EgressNetwork, error) {
	var en workspace.EgressNetwork
	err := rt.call(ctx, http.MethodPost, "/v1/runtime/egress-network", struct{}{}, &en)
	return en, err
}

// runBackstop is how long past a run's own timeout Run waits for the app's
// end of it before it gives up on the answer. The run's timeout counts
// only the program; around it the slowest runtime (Kubernetes) may take,
// each phase bounded on its own: creating the run's objects (a
// minute), the pod's start (up to 5 min: scheduling, pulling the image),
// copying the tree in and out, the kill's grace, and up to 90 s for the
// pod to be gone. Giving up sooner would report a run lost that the app
// is still finishing (its container possibly still there, the workspace
// released while the tree is copied back), so the margin covers all of
// those with room to spare; the Docker Engine's runs end far sooner.
const runBackstop = 15 * time.Minute

// Run implements workspace.Runtime. ctx must carry the agent (WithAgent).
func (rt *Runtime) Run(ctx context.Context, spec workspace.ContainerSpec, stdout, stderr io.Writer) (workspace.ExitStatus, error) {
	agent := agentFrom(ctx)
	if !proposal.ValidAgent(agent) {
		return workspace.ExitStatus{}, errcode.New(errcode.InvalidArgument, "a run through the app needs the agent it is made for")
	}
	body, err := json.Marshal(spec)
	if err != nil {
		return workspace.ExitStatus{}, err
	}
	// The request outlives ctx: when ctx ends, the app is told to cancel
	// the run, and Run waits for the app to have removed its container.
	reqCtx, cancelReq := context.WithTimeout(context.WithoutCancel(ctx), spec.Limits.Timeout+runBackstop)
	defer cancelReq()
	req, err := rt.c.newRequest(reqCtx, agent, http.MethodPost, "/v1/runtime/runs", bytes.NewReader(body))
	if err != nil {
		return workspace.ExitStatus{}, err
	}
	resp, err := rt.c.hc.Do(req)
	if err != nil {
		return workspace.ExitStatus{}, runtimeError(fmt.Errorf("%w: %w", ErrUnavailable, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return workspace.ExitStatus{}, runtimeError(readAPIError(resp))
	}

	sig := &runSignaller{rt: rt, ctx: reqCtx, agent: agent, run: spec.RunID, fallback: cancelReq}
	stopWatch := context.AfterFunc(ctx, func() { sig.send(SignalCancel) })
	defer stopWatch()

	outputStopped := false
	buf := make([]byte, 0, maxFrame)
	for {
		kind, p, err := readFrame(resp.Body, buf)
		if err != nil {
			// The stream broke before the run's end: the app stopped, or
			// the backstop fired.
			return workspace.ExitStatus{}, runtimeError(fmt.Errorf("%w: %w: the run's stream ended early: %w", ErrUnavailable, ErrAnswerLost, err))
		}
		switch kind {
		case frameStdout, frameStderr:
			if outputStopped {
				continue
			}
			w := stdout
			if kind == frameStderr {
				w = stderr
			}
			if _, werr := w.Write(p); werr != nil {
				// The writer refuses more output: the run stops, as a
				// local runtime stops it when its copy fails.
				outputStopped = true
				sig.send(SignalStopOutput)
			}
		case frameEnd:
			var end RunEnd
			if err := json.Unmarshal(p, &end); err != nil {
				return workspace.ExitStatus{}, fmt.Errorf("gateway: decode the run's end: %w", err)
			}
			if outputStopped {
				end.Status.OutputStopped = true
			}
			if end.Error != nil {
				return end.Status, &errcode.Error{Code: end.Error.Code, Msg: end.Error.Message, Data: end.Error.Data}
			}
			return end.Status, nil
		default:
			return workspace.ExitStatus{}, fmt.Errorf("gateway: unknown frame %d in the run's stream", kind)
		}
	}
}

// runSignaller sends a run's signals, each at most once. A signal that
// cannot be delivered ends the request instead: the app cancels a run
// whose caller went away.
type runSignaller struct {
	rt       *Runtime
	ctx      context.Context
	agent    string
	run      string
	fallback func()

	mu   sync.Mutex
	sent map[string]bool
}

func (s *runSignaller) send(sig string) {
	s.mu.Lock()
	if s.sent == nil {
		s.sent = map[string]bool{}
	}
	if s.sent[sig] {
		s.mu.Unlock()
		return
	}
	s.sent[sig] = true
	s.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
		defer cancel()
		b, _ := json.Marshal(RunSignal{Signal: sig})
		err := s.rt.c.do(ctx, s.agent, http.MethodPost, "/v1/runtime/runs/"+url.PathEscape(s.run)+"/signal", bytes.NewReader(b), nil)
		// Not found: the run is over already, and its end is on its way.
		if err != nil && !errcode.IsCode(err, errcode.NotFound) {
			s.fallback()
		}
	}()
}
