package gateway

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace"
)

// The runtime routes carry workspace.Runtime's calls from a sidecar to the
// app, which makes them with its own configured runtime (the Docker
// Engine's, or a cluster's): the sidecar links no container client.
//
// A sidecar's token is not the app's trust. The app runs only a spec its
// own store would make (workspace.Manager.CheckSpec: that workspace's
// paths, ready and the calling agent's, the configured image, OCI runtime
// and limits), only for the run in progress in that workspace
// (Manager.AcceptRun: the sidecar's Run holds the workspace and recorded
// the run), one run of a workspace at a time, and Containers and Remove
// reach only containers labelled as its store's. A spec names the granted
// secrets but their values are not the sidecar's to give: the app runs the
// spec AcceptRun returns, with the values its own store holds.
//
// A confined session's token reaches these routes too: the session's
// sidecar runs outside the sandbox and offers the workspace tools when an
// image is configured, and their runs must go somewhere. agentOf holds it
// to the session's agent, and callerReaches to the workspaces of that
// agent made from the session's repository, for runs, Containers and
// Remove alike, so one session cannot run, see or stop the runs of
// another session of the same client, nor of the client unconfined.

// RuntimeRoutes are the runtime routes.
var RuntimeRoutes = []string{
	"GET /v1/runtime",
	"POST /v1/runtime/image-check",
	"POST /v1/runtime/oci-check",
	"POST /v1/runtime/runs",
	"POST /v1/runtime/runs/{run}/signal",
	"GET /v1/runtime/containers",
	"DELETE /v1/runtime/containers/{id}",
	"POST /v1/runtime/egress-network",
}

// RuntimeHost is the app's side of the runtime routes.
type RuntimeHost struct {
	// Runtime is the app's configured runtime.
	Runtime workspace.Runtime
	// Store is the workspace store the app and its sidecars share; every
	// spec is checked against it.
	Store *workspace.Manager
	// Policy is the image and OCI runtime configured now.
	Policy func() workspace.RunPolicy
}

// RuntimeName is the answer of GET /v1/runtime.
type RuntimeName struct {
	Name string `json:"name"`
}

// ImageCheck is the body of POST /v1/runtime/image-check.
type ImageCheck struct {
	ImageID string `json:"imageId"`
}

// OCICheck is the body of POST /v1/runtime/oci-check.
type OCICheck struct {
	Name string `json:"name"`
}

// RunSignal is the body of POST /v1/runtime/runs/{run}/signal.
type RunSignal struct {
	// Signal is SignalStopOutput or SignalCancel.
	Signal string `json:"signal"`
}

// The signals a sidecar sends to a run in progress.
const (
	// SignalStopOutput: the run's output writer refused more output
	// (workspace.ErrStopOutput); the run stops and reports OutputStopped.
	SignalStopOutput = "stop-output"
	// SignalCancel: the run's context ended (Stop, Destroy); the run is
	// cancelled, its container removed.
	SignalCancel = "cancel"
)

// RunEnd is the last frame of a run's stream.
type RunEnd struct {
	Status workspace.ExitStatus `json:"status"`
	Error  *ErrorDetail         `json:"error,omitempty"`
}

// A run's answer is a stream of frames: one byte of kind, four of length
// (big-endian), then the payload. Output frames carry the run's bytes as
// they come; the end frame carries RunEnd as JSON and is the last.
const (
	frameStdout byte = 1
	frameStderr byte = 2
	frameEnd    byte = 3
	// maxFrame bounds one frame's payload; output is split to fit.
	maxFrame = 64 << 10

	// runStreamType is the answer's content type.
	runStreamType = "application/vnd.sluice.run-stream"
)

// frameWriteTimeout bounds the write of one frame (and of the answer's
// header): a caller that stops reading ends its run's stream there, and
// the run is stopped and its container removed, rather than the write
// blocking for as long as the connection stays open. A variable for tests.
var frameWriteTimeout = time.Minute

// liveRun is a run the app is carrying out for a sidecar.
type liveRun struct {
	agent     string
	session   string
	workspace string
	signal    func(string)
}

type runtimeHandlers struct {
	s *Server
	h *RuntimeHost

	mu   sync.Mutex
	runs map[string]*liveRun
}

func (s *Server) handleRuntime(h *RuntimeHost) {
	rh := &runtimeHandlers{s: s, h: h, runs: map[string]*liveRun{}}
	handlers := []http.HandlerFunc{rh.name, rh.checkImage, rh.checkOCI, rh.run, rh.signal, rh.containers, rh.remove, rh.egress}
	for i, p := range RuntimeRoutes {
		f := handlers[i]
		s.Handle(p, func(w http.ResponseWriter, r *http.Request) {
			if h == nil || h.Runtime == nil || h.Store == nil {
				WriteError(w, http.StatusNotImplemented, errcode.Unsupported,
					"the Sluice app has no container runtime: workspace runs go through it; install and start the Docker Engine and restart the app", nil)
				return
			}
			f(w, r)
		})
	}
}

// failRuntime answers with the runtime's error as it is: its message is
// the app's own and says what the person must do (start the Engine,
// register a runtime), which the run's caller shows.
func (rh *runtimeHandlers) failRuntime(w http.ResponseWriter, err error) {
	if e, ok := errcode.As(err); ok {
		WriteError(w, statusOf(e.Code), e.Code, e.Msg, e.Data)
		return
	}
	rh.s.fail(w, err)
}

func (rh *runtimeHandlers) name(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, http.StatusOK, RuntimeName{Name: rh.h.Runtime.Name()})
}

func (rh *runtimeHandlers) checkImage(w http.ResponseWriter, r *http.Request) {
	var req ImageCheck
	if !decodeBody(w, r, &req, "image check") {
		return
	}
	// Only the configured image: the routes do not tell a sidecar what
	// else the Engine holds.
	if req.ImageID != rh.h.Policy().Image {
		WriteError(w, http.StatusForbidden, errcode.Forbidden, "the image is not the configured workspace image", nil)
		return
	}
	if err := rh.h.Runtime.CheckImage(r.Context(), req.ImageID); err != nil {
		rh.failRuntime(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, struct{}{})
}

func (rh *runtimeHandlers) checkOCI(w http.ResponseWriter, r *http.Request) {
	var req OCICheck
	if !decodeBody(w, r, &req, "runtime check") {
		return
	}
	if req.Name != rh.h.Policy().RuntimeName {
		WriteError(w, http.StatusForbidden, errcode.Forbidden, "the OCI runtime is not the configured one", nil)
		return
	}
	info, err := rh.h.Runtime.CheckRuntime(r.Context(), req.Name)
	if err != nil {
		rh.failRuntime(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, info)
}

func (rh *runtimeHandlers) egress(w http.ResponseWriter, r *http.Request) {
	en, err := rh.h.Runtime.EgressNetwork(r.Context())
	if err != nil {
		rh.failRuntime(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, en)
}

// storeContainers lists the store's containers a caller may see: all of
// them for the gateway's own token, those of the workspaces a session
// reaches (callerReaches) for a session's.
func (rh *runtimeHandlers) storeContainers(ctx context.Context) ([]workspace.ContainerInfo, error) {
	list, err := rh.h.Runtime.Containers(ctx, rh.h.Store.StoreKey())
	if err != nil {
		return nil, err
	}
	if CallerFrom(ctx) == nil {
		return list, nil
	}
	return slices.DeleteFunc(list, func(ci workspace.ContainerInfo) bool {
		ws, err := rh.h.Store.Get(ci.WorkspaceID)
		return err != nil || !callerReaches(ctx, ws)
	}), nil
}

// callerReaches reports whether the caller may reach workspace ws: any of
// the store's for the gateway's own token; for a confined session, only a
// workspace of its agent made from its own repository. The agent alone
// does not tell sessions apart: every session of a client, and the
// client's unconfined sidecar, speak as the same agent.
func callerReaches(ctx context.Context, ws *workspace.Workspace) bool {
	c := CallerFrom(ctx)
	if c == nil {
		return true
	}
	return ws.Agent == c.Agent && c.Repo != "" && ws.Source.Path == c.Repo
}

func (rh *runtimeHandlers) containers(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("store") != rh.h.Store.StoreKey() {
		WriteError(w, http.StatusForbidden, errcode.Forbidden, "only the app's own workspace store can be listed", nil)
		return
	}
	list, err := rh.storeContainers(r.Context())
	if err != nil {
		rh.failRuntime(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, list)
}

func (rh *runtimeHandlers) remove(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	list, err := rh.storeContainers(r.Context())
	if err != nil {
		rh.failRuntime(w, err)
		return
	}
	if !slices.ContainsFunc(list, func(ci workspace.ContainerInfo) bool { return ci.ID == id }) {
		// Gone already, or not a container of this store: either way
		// there is nothing here this caller may remove.
		WriteError(w, http.StatusNotFound, errcode.NotFound, "no container of this workspace store has this id", nil)
		return
	}
	if err := rh.h.Runtime.Remove(r.Context(), id); err != nil {
		rh.failRuntime(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, struct{}{})
}

func (rh *runtimeHandlers) signal(w http.ResponseWriter, r *http.Request) {
	agent, ok := agentOf(w, r)
	if !ok {
		return
	}
	var req RunSignal
	if !decodeBody(w, r, &req, "run signal") {
		return
	}
	if !workspace.ValidRunID(r.PathValue("run")) {
		WriteError(w, http.StatusBadRequest, errcode.InvalidArgument, "the run id must be a UUID", nil)
		return
	}
	if req.Signal != SignalStopOutput && req.Signal != SignalCancel {
		WriteError(w, http.StatusBadRequest, errcode.InvalidArgument, "signal must be stop-output or cancel", nil)
		return
	}
	rh.mu.Lock()
	lr := rh.runs[r.PathValue("run")]
	rh.mu.Unlock()
	if lr == nil || lr.agent != agent || lr.session != sessionOf(r.Context()) {
		WriteError(w, http.StatusNotFound, errcode.NotFound, "no run in progress has this id", nil)
		return
	}
	lr.signal(req.Signal)
	WriteJSON(w, http.StatusOK, struct{}{})
}

func sessionOf(ctx context.Context) string {
	if c := CallerFrom(ctx); c != nil {
		return c.Session
	}
	return ""
}

// run checks the spec, then runs it and streams its output and end. The
// run ends with the request: a sidecar that goes away cancels it, and the
// runtime removes its container before Run returns.
func (rh *runtimeHandlers) run(w http.ResponseWriter, r *http.Request) {
	agent, ok := agentOf(w, r)
	if !ok {
		return
	}
	var spec workspace.ContainerSpec
	if !decodeBody(w, r, &spec, "container spec") {
		return
	}
	if CallerFrom(r.Context()) != nil {
		// Another session's workspace looks like no workspace at all.
		ws, err := rh.h.Store.Get(spec.WorkspaceID)
		if err == nil && !callerReaches(r.Context(), ws) {
			err = &errcode.Error{Code: errcode.WorkspaceNotFound, Msg: "no workspace with this id belongs to this session"}
		}
		if err != nil {
			rh.failRuntime(w, err)
			return
		}
	}
	// AcceptRun admits only the run in progress in the workspace (its
	// sidecar's Run holds the workspace's lock and wrote the run's
	// record) and lists it as the workspace's run in the app's store, so
	// Stop and Destroy in the app cancel it. The spec run from here on is
	// the one it returns: the granted secrets' values are the store's, not
	// what the sidecar sent.
	runCtx, accepted, release, err := rh.h.Store.AcceptRun(r.Context(), agent, spec, rh.h.Policy())
	if err != nil {
		rh.failRuntime(w, err)
		return
	}
	spec = accepted
	// The run is unlisted (here and in the store) before its end frame
	// goes out, not after: the sidecar's Run ends with that frame and
	// releases the workspace, and its next run must find this one gone.
	release = sync.OnceFunc(release)
	defer release()
	ctx, cancel := context.WithCancel(runCtx)
	defer cancel()
	out := &frameWriter{w: w, rc: http.NewResponseController(w), deadline: frameWriteTimeout,
		limit: workspace.OutputStopAt(spec.Limits), broken: cancel}
	var stopped sync.Once
	var outputStopped bool
	lr := &liveRun{agent: agent, session: sessionOf(r.Context()), workspace: spec.WorkspaceID, signal: func(sig string) {
		if sig == SignalStopOutput {
			stopped.Do(func() {
				out.stop()
				outputStopped = true
			})
		}
		cancel()
	}}
	// The app holds the run to its output limit itself: a caller that
	// never signals does not make it run on.
	out.overLimit = func() { lr.signal(SignalStopOutput) }
	rh.mu.Lock()
	if rh.runs[spec.RunID] != nil || slices.ContainsFunc(slices.Collect(maps.Values(rh.runs)), func(o *liveRun) bool { return o.workspace == spec.WorkspaceID }) {
		rh.mu.Unlock()
		WriteError(w, http.StatusConflict, errcode.Conflict, "a run of this workspace is already in progress", nil)
		return
	}
	rh.runs[spec.RunID] = lr
	rh.mu.Unlock()
	unlist := sync.OnceFunc(func() {
		rh.mu.Lock()
		delete(rh.runs, spec.RunID)
		rh.mu.Unlock()
	})
	defer unlist()

	// A run may last as long as its limits allow, longer than the
	// server's write timeout for other answers: each write has its own
	// deadline instead (frameWriteTimeout).
	_ = out.rc.SetWriteDeadline(time.Now().Add(out.deadline))
	w.Header().Set("Content-Type", runStreamType)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if err := out.rc.Flush(); err != nil {
		return
	}

	st, err := rh.h.Runtime.Run(ctx, spec, out.stream(frameStdout), out.stream(frameStderr))
	stopped.Do(func() {})
	end := RunEnd{Status: st}
	if outputStopped {
		// Stopped for its output, by the sidecar's writer: that is the
		// run's outcome, not a cancellation (the local runtime reports
		// it the same way).
		st.OutputStopped = true
		end.Status, err = st, nil
	}
	if err != nil {
		e, ok := errcode.As(err)
		if !ok {
			rh.s.log.Error("gateway: runtime run failed", "err", err)
			e = &errcode.Error{Code: errcode.Internal, Msg: "the run failed in the app"}
		}
		end.Error = &ErrorDetail{Code: e.Code, Message: e.Msg, Data: e.Data}
	}
	b, merr := json.Marshal(end)
	if merr != nil {
		return
	}
	unlist()
	release()
	out.frame(frameEnd, b)
	if h := runEndedHook.Load(); h != nil {
		(*h)()
	}
}

// runEndedHook, when set, is called once a run's end frame is written
// (tests hold the handler there).
var runEndedHook atomic.Pointer[func()]

// frameWriter writes a run's frames to its answer, one at a time, each
// within deadline. Output past limit (both streams together) is refused
// and overLimit called; a write that fails (the caller stopped reading, or
// went away) fails every later one and calls broken, which stops the run.
type frameWriter struct {
	w         io.Writer
	rc        *http.ResponseController
	deadline  time.Duration
	limit     int64
	overLimit func()
	broken    func()

	mu      sync.Mutex
	stopped bool
	total   int64
	err     error
}

// count adds n bytes of output to the run's total and reports whether it
// is still within the limit.
func (f *frameWriter) count(n int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.total += int64(n)
	return f.total <= f.limit
}

// stop makes every later output write fail with ErrStopOutput, as the
// sidecar's own writer did.
func (f *frameWriter) stop() {
	f.mu.Lock()
	f.stopped = true
	f.mu.Unlock()
}

func (f *frameWriter) frame(kind byte, p []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	if kind != frameEnd && f.stopped {
		return workspace.ErrStopOutput
	}
	var hdr [5]byte
	hdr[0] = kind
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(p)))
	err := f.rc.SetWriteDeadline(time.Now().Add(f.deadline))
	if err == nil {
		_, err = f.w.Write(hdr[:])
	}
	if err == nil {
		_, err = f.w.Write(p)
	}
	if err == nil {
		err = f.rc.Flush()
	}
	if err != nil {
		f.err = err
		if f.broken != nil {
			f.broken()
		}
	}
	return err
}

type streamWriter struct {
	f    *frameWriter
	kind byte
}

func (f *frameWriter) stream(kind byte) io.Writer { return streamWriter{f: f, kind: kind} }

func (s streamWriter) Write(p []byte) (int, error) {
	if !s.f.count(len(p)) {
		if s.f.overLimit != nil {
			s.f.overLimit()
		}
		return 0, workspace.ErrStopOutput
	}
	n := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), maxFrame)]
		if err := s.f.frame(s.kind, chunk); err != nil {
			return n, err
		}
		n += len(chunk)
		p = p[len(chunk):]
	}
	return n, nil
}

// readFrame reads one frame; io.EOF only before a frame starts.
func readFrame(r io.Reader, buf []byte) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxFrame && hdr[0] != frameEnd || n > MaxBodyBytes {
		return 0, nil, errors.New("gateway: run stream frame too large")
	}
	if int(n) > cap(buf) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return hdr[0], buf, nil
}
