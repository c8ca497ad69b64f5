package workspace

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/core/errcode"
)

// RunRequest is one command to run in a workspace's container.
type RunRequest struct {
	// Argv is the command and its arguments, passed to the container as an
	// array. Nothing on the host parses it; to use a shell, pass
	// ["sh", "-c", "…"], which runs inside the container.
	Argv []string
	// Env adds variables to the run's environment (not PATH, HOME, LANG,
	// proxy variables or granted secret names).
	Env map[string]string
	// Limits lower the workspace defaults; zero fields keep them.
	Limits Limits
	// ReportPath is a test report inside the workspace (JUnit XML, TAP or
	// go test -json) read after the run.
	ReportPath string
	// ReportFormat is junit, tap or gotest; empty guesses.
	ReportFormat string
	// StdoutFormat, gotest or tap, parses stdout as the test report.
	StdoutFormat string
	// OnOutput streams output as it arrives (stream is "stdout" or
	// "stderr"), redacted and within the output limit.
	OnOutput func(stream string, chunk []byte)
	// OnProgress is told, while the run goes on, how long it has run and
	// the end of its output so far: soon after output arrives, at least
	// every second without, and once more before Run returns if output
	// came after the last report. Calls come from one goroutine.
	OnProgress func(RunProgress)
}

// RunResult is the evidence of one run.
type RunResult struct {
	ID          string    `json:"id"`
	WorkspaceID string    `json:"workspaceId"`
	Argv        []string  `json:"argv"`
	StartedAt   time.Time `json:"startedAt"`
	DurationMS  int64     `json:"durationMs"`
	ExitCode    int       `json:"exitCode"`
	OOMKilled   bool      `json:"oomKilled"`
	TimedOut    bool      `json:"timedOut"`
	// OutputStopped: the run was stopped for producing far more output
	// than the limit.
	OutputStopped bool   `json:"outputStopped,omitempty"`
	ImageID       string `json:"imageId"`
	Runtime       string `json:"runtime"`
	// OCIRuntime is the runtime the container ran under: runc, or runsc
	// for gVisor.
	OCIRuntime string `json:"ociRuntime,omitempty"`
	// ContainerID is the (removed) container the run used.
	ContainerID string `json:"containerId"`
	Stdout      string `json:"stdout"`
	Stderr      string `json:"stderr"`
	// Truncated is set when output went past the limit; OutputBytes
	// counts all of it.
	Truncated     bool        `json:"truncated"`
	OutputBytes   int64       `json:"outputBytes"`
	Limits        Limits      `json:"limits"`
	Egress        []string    `json:"egress,omitempty"`
	EgressDenials []Denial    `json:"egressDenials,omitempty"`
	Tests         *TestReport `json:"tests,omitempty"`
	// ReportError says why a requested report could not be read.
	ReportError string `json:"reportError,omitempty"`
	// Running marks the record of a run still going on: its duration and
	// output are those so far (see live.go).
	Running bool `json:"running,omitempty"`
	// Interrupted marks a record left running by a process that ended
	// before its run did (a crash): there is no result.
	Interrupted bool `json:"interrupted,omitempty"`
	// KeyHash is the SHA-256 (hex) of the run's ContainerSpec.RunKey.
	KeyHash string `json:"keyHash,omitempty"`
}

const (
	maxArgs      = 1024
	maxArgvBytes = 1 << 20
	maxEnvVars   = 64
	// A run producing this many times its output limit (and at least
	// outputStopFloor) is stopped: it is flooding, and what it says past
	// that is never kept anyway.
	outputStopFactor = 16
	outputStopFloor  = 32 << 20
)

// minPIDsRunsc is the lowest PID limit a run under runsc is given.
const minPIDsRunsc = 64

var envNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`) })

// ValidEnvName reports whether s can name an environment variable of a
// run or a session's container.
func ValidEnvName(s string) bool { return envNameRe().MatchString(s) }

// Run runs argv in a fresh hardened container on the workspace tree and
// returns its evidence. A non-zero exit, a timeout or an OOM kill is
// evidence, not an error; errors are for runs that could not happen.
func (m *Manager) Run(ctx context.Context, id string, req RunRequest) (*RunResult, error) {
	reportComps, limits, err := m.checkRunRequest(req)
	if err != nil {
		return nil, err
	}
	w, unlock, err := m.open(id, true, true)
	if err != nil {
		return nil, err
	}
	defer unlock()
	rtInfo, err := m.checkEngine(ctx, w, limits)
	if err != nil {
		return nil, err
	}
	if err := m.syncBeforeRun(ctx, id); err != nil {
		return nil, err
	}
	secrets, err := m.runSecrets(id, req.Env)
	if err != nil {
		return nil, err
	}

	runID := uuid.NewString()
	ctx, release := m.holdActive(ctx, id, runID)
	defer release()
	route, err := m.routeEgress(ctx, w, runID)
	if err != nil {
		return nil, err
	}
	if route.grant != nil {
		defer route.grant.Revoke()
	}
	spec := m.containerSpec(w, runID, req.Argv, limits, runEnv(req.Env, secrets, route.proxyURL), route.network)
	spec.SecretEnv = sortedKeys(secrets)
	if route.proxyURL != "" {
		// The proxy URL carries the run's egress credentials.
		spec.SecretEnv = append(spec.SecretEnv, "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
	}
	key, err := newRunKey()
	if err != nil {
		return nil, err
	}
	spec.RunKey = key
	out := newRunOutput(limits.OutputBytes, req, secrets)
	rec := m.newRunRecord(w, runID, req.Argv, limits, rtInfo.Name, secrets)
	rec.KeyHash = runKeyHash(key)
	res, err := m.execute(ctx, spec, rec, out, route.grant, req.OnProgress)
	if err != nil {
		return nil, err
	}
	tests, err := m.readTests(id, req, reportComps, out.stdoutTee)
	if err != nil {
		res.ReportError = err.Error()
	}
	res.Tests = tests
	redactTests(secrets, res.Tests)
	m.recordRun(w, res)
	return res, nil
}

// checkRunRequest refuses a request no run could honour, before the
// workspace is locked, and returns the report path's components and the
// run's limits.
func (m *Manager) checkRunRequest(req RunRequest) (reportComps []string, limits Limits, err error) {
	if err := checkArgv(req.Argv); err != nil {
		return nil, Limits{}, err
	}
	if err := checkRunEnv(req.Env); err != nil {
		return nil, Limits{}, err
	}
	if err := checkReportFormats(req.StdoutFormat, req.ReportFormat); err != nil {
		return nil, Limits{}, err
	}
	if req.ReportPath != "" {
		if reportComps, err = splitRel(req.ReportPath); err != nil {
			return nil, Limits{}, err
		}
	}
	if limits, err = req.Limits.withDefaults(m.opts.Limits); err != nil {
		return nil, Limits{}, err
	}
	if err := limits.within(m.opts.Limits); err != nil {
		return nil, Limits{}, err
	}
	if m.opts.Runtime == nil {
		return nil, Limits{}, ErrNoRuntime
	}
	if m.opts.Image == "" {
		return nil, Limits{}, &errcode.Error{Code: errcode.Unsupported, Msg: "no workspace image is configured"}
	}
	return reportComps, limits, nil
}

func checkRunEnv(env map[string]string) error {
	if len(env) > maxEnvVars {
		return errcode.New(errcode.InvalidArgument, "at most %d environment variables may be set", maxEnvVars)
	}
	for k, v := range env {
		if !envNameRe().MatchString(k) || slices.Contains(reservedEnv, k) || strings.HasPrefix(k, "LD_") || strings.ContainsRune(v, 0) {
			return errcode.New(errcode.InvalidArgument, "environment variable %q cannot be set", k)
		}
	}
	return nil
}

func checkReportFormats(stdoutFormat, reportFormat string) error {
	switch stdoutFormat {
	case "", FormatGoTest, FormatTAP:
	default:
		return errcode.New(errcode.InvalidArgument, "stdoutFormat must be gotest or tap")
	}
	switch reportFormat {
	case "", FormatJUnit, FormatTAP, FormatGoTest:
	default:
		return errcode.New(errcode.InvalidArgument, "reportFormat must be junit, tap or gotest")
	}
	return nil
}

// checkEngine verifies the image and the OCI runtime, and that the
// runtime can give this workspace's run what it needs.
func (m *Manager) checkEngine(ctx context.Context, w *Workspace, limits Limits) (RuntimeInfo, error) {
	if err := m.checkImage(ctx); err != nil {
		return RuntimeInfo{}, err
	}
	rtInfo, err := m.checkRuntime(ctx)
	if err != nil {
		return RuntimeInfo{}, err
	}
	if len(w.Egress) > 0 && rtInfo.NoNetwork {
		return RuntimeInfo{}, errEgressNoNetwork(rtInfo.Name)
	}
	// gVisor's own threads count against the PID limit: below about 48
	// the sandbox cannot even start, which the Engine reports only as a
	// failed start.
	if rtInfo.Name == "runsc" && limits.PIDs < minPIDsRunsc {
		return RuntimeInfo{}, &errcode.Error{Code: errcode.InvalidArgument, Data: map[string]any{"limit": "pids", "min": minPIDsRunsc, "runtime": "runsc"},
			Msg: fmt.Sprintf("under runsc (gVisor) a run needs a PID limit of at least %d: the sandbox's own threads count against it", minPIDsRunsc)}
	}
	return rtInfo, nil
}

// runSecrets returns the workspace's granted secrets, refusing a request
// that would override one.
func (m *Manager) runSecrets(id string, env map[string]string) (map[string]string, error) {
	secrets, err := m.secretValues(id)
	if err != nil {
		return nil, err
	}
	for k := range env {
		if _, ok := secrets[k]; ok {
			return nil, errcode.New(errcode.InvalidArgument, "environment variable %q is a granted secret and cannot be overridden", k)
		}
	}
	return secrets, nil
}

// activeRun is run runID listed in Manager.active, where Stop and Destroy
// find it: cancel ends it, and ended is closed once it is unlisted.
type activeRun struct {
	runID  string
	cancel context.CancelFunc
	ended  chan struct{}
}

// holdActive derives the run's context and lists the run in m.active
// until release.
func (m *Manager) holdActive(ctx context.Context, id, runID string) (context.Context, func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.listActiveLocked(ctx, id, runID)
}

// listActiveLocked lists run runID of workspace id in m.active, whose mu
// the caller holds, and returns its context and release, which unlists it
// (once, however often it is called) and ends its context.
func (m *Manager) listActiveLocked(ctx context.Context, id, runID string) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	r := &activeRun{runID: runID, cancel: cancel, ended: make(chan struct{})}
	m.active[id] = r
	return ctx, sync.OnceFunc(func() {
		m.mu.Lock()
		if m.active[id] == r {
			delete(m.active, id)
		}
		m.mu.Unlock()
		close(r.ended)
		cancel()
	})
}

// runEndWait bounds how long a run admitted for a sidecar waits for the
// workspace's run before it to be ended (its containers removed).
const runEndWait = 30 * time.Second

// errStoppedWhileWaiting refuses a run that waited for admission while
// the workspace was stopped or destroyed.
var errStoppedWhileWaiting = &errcode.Error{Code: errcode.Conflict,
	Msg: "the workspace was stopped while this run waited for the run before it to end; it was not started"}

// awaitRunEnd waits until workspace id has no run listed in m.active, for
// up to runEndWait and while ctx lasts; a run still listed then is
// ErrLocked, and so, at once, is a listed run of the same runID (a copy
// of the run in progress is not another run). A sidecar killed during a
// run lets go of the workspace's lock at once, while here the run it
// started is still being ended (its request cancelled, its container
// removed): the next sidecar's run of the workspace waits for that
// instead of being refused. It returns the workspace's count of stops
// when the wait began; a stop or destroy during the wait refuses the run
// (AcceptRun checks the count again when it lists the run).
func (m *Manager) awaitRunEnd(ctx context.Context, id, runID string) (uint64, error) {
	m.mu.Lock()
	stops := m.stops[id]
	m.mu.Unlock()
	timer := time.NewTimer(runEndWait)
	defer timer.Stop()
	for {
		m.mu.Lock()
		r, stopped := m.active[id], m.stops[id] != stops
		m.mu.Unlock()
		switch {
		case stopped:
			return 0, errStoppedWhileWaiting
		case r == nil && ctx.Err() != nil:
			return 0, ErrLocked
		case r == nil:
			return stops, nil
		case r.runID == runID:
			return 0, ErrLocked
		}
		if m.waiting != nil {
			m.waiting()
		}
		select {
		case <-r.ended:
		case <-timer.C:
			return 0, ErrLocked
		case <-ctx.Done():
			return 0, ErrLocked
		}
	}
}

// stopped counts a Stop or Destroy of workspace id and cancels its run in
// progress, if any.
func (m *Manager) stopped(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stops[id]++
	if r := m.active[id]; r != nil {
		r.cancel()
	}
}

// egressRoute is how a run reaches the egress proxy; the zero value is a
// run without egress.
type egressRoute struct {
	grant    *ProxyGrant
	proxyURL string
	network  string
}

// routeEgress registers a run of a workspace with egress grants with the
// proxy. The caller revokes the grant when the run ends.
func (m *Manager) routeEgress(ctx context.Context, w *Workspace, runID string) (egressRoute, error) {
	if len(w.Egress) == 0 {
		return egressRoute{}, nil
	}
	eh, err := m.ensureEgress(ctx)
	if err != nil {
		return egressRoute{}, err
	}
	grant, err := eh.proxy.Register(w.ID, runID, w.Egress)
	if err != nil {
		return egressRoute{}, err
	}
	user, pass := grant.Credentials()
	proxyURL := (&url.URL{Scheme: "http", User: url.UserPassword(user, pass), Host: net.JoinHostPort(eh.net.Gateway, fmt.Sprint(eh.port))}).String()
	return egressRoute{grant: grant, proxyURL: proxyURL, network: eh.net.Name}, nil
}

// runEnv is a run's environment, built from nothing: no variable of the
// host process reaches the container.
func runEnv(reqEnv, secrets map[string]string, proxyURL string) []string {
	env := []string{"PATH=" + containerPath, "HOME=" + containerHome, "LANG=" + containerLang}
	for _, k := range sortedKeys(reqEnv) {
		env = append(env, k+"="+reqEnv[k])
	}
	for _, k := range sortedKeys(secrets) {
		env = append(env, k+"="+secrets[k])
	}
	if proxyURL != "" {
		for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
			env = append(env, k+"="+proxyURL)
		}
	}
	return env
}

func (m *Manager) containerSpec(w *Workspace, runID string, argv []string, limits Limits, env []string, network string) ContainerSpec {
	spec := ContainerSpec{
		WorkspaceID: w.ID,
		RunID:       runID,
		StoreKey:    m.storeKey,
		Image:       m.opts.Image,
		Argv:        append([]string(nil), argv...),
		User:        m.ContainerUser(),
		TreePath:    m.treeDir(w.ID),
		Limits:      limits,
		RuntimeName: m.opts.RuntimeName,
		Network:     network,
		Env:         env,
	}
	if w.GitVisible {
		spec.GitDirPath = m.gitDir(w.ID)
	}
	return spec
}

// runOutput is where a run's streams go: redacted, then captured within
// the output limit; stdout is also kept whole (to maxReportBytes) when it
// is parsed as a test report.
type runOutput struct {
	capture        *capture
	stdoutTee      *capBuffer
	stdout, stderr *redactor
}

func newRunOutput(limit int64, req RunRequest, secrets map[string]string) runOutput {
	out := runOutput{capture: newCapture(limit, req.OnOutput)}
	if req.StdoutFormat != "" {
		out.stdoutTee = &capBuffer{max: maxReportBytes, truncate: true}
	}
	out.stdout = newRedactor(secrets, out.capture.stream("stdout", out.stdoutTee))
	out.stderr = newRedactor(secrets, out.capture.stream("stderr", nil))
	return out
}

// newRunKey draws a run's RunKey: 32 random bytes, hex.
func newRunKey() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", errcode.Wrap(errcode.Internal, err, "cannot draw the run's key")
	}
	return hex.EncodeToString(b[:]), nil
}

// runKeyHash is the SHA-256 (hex) of a run's key, as its record holds it.
func runKeyHash(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

// newRunRecord is the part of a run's evidence known before it starts.
func (m *Manager) newRunRecord(w *Workspace, runID string, argv []string, limits Limits, ociRuntime string, secrets map[string]string) RunResult {
	return RunResult{
		ID:          runID,
		WorkspaceID: w.ID,
		Argv:        redactArgv(secrets, argv),
		StartedAt:   m.now().UTC(),
		ImageID:     m.opts.Image,
		Runtime:     m.opts.Runtime.Name(),
		OCIRuntime:  ociRuntime,
		Limits:      limits,
		Egress:      w.Egress,
	}
}

// execute runs the container, its record live on disk meanwhile, and
// completes rec with what the run did. A run that could not happen
// discards the live record.
func (m *Manager) execute(ctx context.Context, spec ContainerSpec, rec RunResult, out runOutput, grant *ProxyGrant, onProgress func(RunProgress)) (*RunResult, error) {
	res := rec
	start := time.Now()
	live := m.startLive(res, out.capture, start, onProgress)
	st, err := m.opts.Runtime.Run(ctx, spec, out.stdout, out.stderr)
	if errors.Is(err, ErrRunNotRemoved) {
		// The run happened and its changes are in the tree: it is recorded
		// as it went (a retry would apply it twice). What is left of it is
		// removed by Reconcile or Destroy.
		m.log.Warn("workspace: the run's container could not be removed", "workspace", spec.WorkspaceID, "run", spec.RunID, "err", err)
		err = nil
	}
	res.DurationMS = time.Since(start).Milliseconds()
	out.stdout.Flush()
	out.stderr.Flush()
	live.finish()
	if grant != nil {
		res.EgressDenials = grant.Denials()
	}
	if err != nil {
		live.discard()
		return nil, err
	}
	res.ExitCode, res.OOMKilled, res.TimedOut, res.OutputStopped = st.ExitCode, st.OOMKilled, st.TimedOut, st.OutputStopped
	res.ContainerID = st.ContainerID
	res.Stdout, res.Stderr, res.Truncated, res.OutputBytes = out.capture.result()
	return &res, nil
}

// readTests reads the run's test report, from the report file or from
// stdout. Its error is evidence (RunResult.ReportError), and comes with
// whatever part of the report could be read.
func (m *Manager) readTests(id string, req RunRequest, reportComps []string, stdoutTee *capBuffer) (*TestReport, error) {
	switch {
	case req.ReportPath != "":
		data, err := m.readReport(id, reportComps)
		if err != nil {
			return nil, err
		}
		return ParseReport(req.ReportFormat, req.ReportPath, data)
	case req.StdoutFormat != "":
		return ParseReport(req.StdoutFormat, "", stdoutTee.Bytes())
	}
	return nil, nil
}

// redactTests keeps secrets out of the report's names and messages.
func redactTests(secrets map[string]string, rep *TestReport) {
	if rep == nil {
		return
	}
	for i := range rep.Cases {
		c := &rep.Cases[i]
		c.Suite, c.Name, c.Message = redactString(secrets, c.Suite), redactString(secrets, c.Name), redactString(secrets, c.Message)
	}
}

// recordRun counts the run against the workspace and stores its evidence.
// Evidence that cannot be stored is logged: the run itself happened.
func (m *Manager) recordRun(w *Workspace, res *RunResult) {
	w.Runs++
	m.touch(w, true)
	if err := m.saveRun(res); err != nil {
		m.log.Warn("workspace: cannot store run evidence", "workspace", w.ID, "run", res.ID, "err", err)
	}
}

func checkArgv(argv []string) error {
	if len(argv) == 0 {
		return errcode.New(errcode.InvalidArgument, "argv must name a command")
	}
	if len(argv) > maxArgs {
		return errcode.New(errcode.InvalidArgument, "argv has more than %d elements", maxArgs)
	}
	total := 0
	for _, a := range argv {
		total += len(a)
		if strings.ContainsRune(a, 0) {
			return errcode.New(errcode.InvalidArgument, "argv must not contain NUL bytes")
		}
	}
	if argv[0] == "" {
		return errcode.New(errcode.InvalidArgument, "argv must name a command")
	}
	if total > maxArgvBytes {
		return errcode.New(errcode.InvalidArgument, "argv is longer than %d bytes", maxArgvBytes)
	}
	return nil
}

// redactArgv keeps secrets out of the stored command line too, should an
// agent have pasted one into it.
func redactArgv(secrets map[string]string, argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = redactString(secrets, a)
	}
	return out
}

// checkImage verifies the configured image once per Manager.
func (m *Manager) checkImage(ctx context.Context) error {
	m.imageMu.Lock()
	defer m.imageMu.Unlock()
	if m.imageChecked == m.opts.Image {
		return nil
	}
	if err := m.opts.Runtime.CheckImage(ctx, m.opts.Image); err != nil {
		return err
	}
	m.imageChecked = m.opts.Image
	return nil
}

// checkRuntime verifies the configured OCI runtime once per Manager: a
// runtime the Engine does not have fails every run, naming it.
func (m *Manager) checkRuntime(ctx context.Context) (RuntimeInfo, error) {
	m.imageMu.Lock()
	defer m.imageMu.Unlock()
	if m.runtimeInfo != nil {
		return *m.runtimeInfo, nil
	}
	info, err := m.opts.Runtime.CheckRuntime(ctx, m.opts.RuntimeName)
	if err != nil {
		return RuntimeInfo{}, err
	}
	m.runtimeInfo = &info
	return info, nil
}

// errEgressNoNetwork refuses egress under a runtime without a network.
func errEgressNoNetwork(runtime string) error {
	return &errcode.Error{Code: errcode.Unsupported, Data: map[string]any{"runtime": runtime},
		Msg: "workspaces run under " + runtime + ", which gives containers no network at all (--network=none), " +
			"so a run cannot reach granted hosts; revoke the egress grant, or run workspaces under runc to use egress"}
}

func (m *Manager) saveRun(res *RunResult) error {
	dir := m.runsDir(res.WorkspaceID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return replaceFile(filepath.Join(dir, res.ID+".json"), b, 0o600)
}

// Runs returns the stored evidence of a workspace's runs, oldest first,
// a run still going on included (marked Running). It takes no lock, so it
// answers while a run holds the workspace: evidence files are replaced
// atomically. A record left running by a process that ended mid-run is
// reported Interrupted.
func (m *Manager) Runs(id string) ([]RunResult, error) {
	w, err := m.readMeta(id)
	if err != nil {
		return nil, err
	}
	if w.State == StateCreating || w.State == StateDestroying {
		return nil, ErrNotFound
	}
	ents, err := os.ReadDir(m.runsDir(w.ID))
	if err != nil && !os.IsNotExist(err) {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot list runs")
	}
	var out []RunResult
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(m.runsDir(w.ID), e.Name()))
		if err != nil {
			continue
		}
		var r RunResult
		if json.Unmarshal(b, &r) == nil {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StartedAt.Before(out[j].StartedAt) })
	for i := range out {
		if !out[i].Running {
			continue
		}
		// A run holds the workspace's lock from start to end: if the lock
		// is free, no process is running this one any more.
		if unlock, err := m.lockWS(w.ID, false); err == nil {
			unlock()
			out[i].Running, out[i].Interrupted, out[i].ExitCode = false, true, -1
		}
	}
	return out, nil
}

// capture keeps the first limit bytes of a run's output (both streams
// together), counts the rest, and tells the streaming callback.
type capture struct {
	mu        sync.Mutex
	limit     int64
	stopAt    int64
	total     int64
	stdout    bytes.Buffer
	stderr    bytes.Buffer
	truncated bool
	onOutput  func(string, []byte)
	// ver counts writes; kick, when set, is told of each (live.go).
	ver  int64
	kick func()
}

func (c *capture) setKick(f func()) {
	c.mu.Lock()
	c.kick = f
	c.mu.Unlock()
}

func (c *capture) version() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ver
}

// tail is the output kept so far, the last n bytes of each stream.
func (c *capture) tail(n int) (stdout, stderr string, truncated bool, total, ver int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return tailString(strings.ToValidUTF8(c.stdout.String(), "\uFFFD"), n), tailString(strings.ToValidUTF8(c.stderr.String(), "\uFFFD"), n), c.truncated, c.total, c.ver
}

func newCapture(limit int64, on func(string, []byte)) *capture {
	return &capture{limit: limit, stopAt: OutputStopAt(Limits{OutputBytes: limit}), onOutput: on}
}

type captureStream struct {
	c    *capture
	name string
	tee  *capBuffer
}

func (c *capture) stream(name string, tee *capBuffer) *captureStream {
	return &captureStream{c: c, name: name, tee: tee}
}

func (s *captureStream) Write(p []byte) (int, error) {
	c := s.c
	if s.tee != nil {
		s.tee.Write(p)
	}
	c.mu.Lock()
	c.total += int64(len(p))
	room := c.limit - int64(c.stdout.Len()+c.stderr.Len())
	kept := p
	if int64(len(kept)) > room {
		kept = kept[:max(room, 0)]
		c.truncated = true
	}
	buf := &c.stdout
	if s.name == "stderr" {
		buf = &c.stderr
	}
	buf.Write(kept)
	stop := c.total > c.stopAt
	c.ver++
	kick := c.kick
	c.mu.Unlock()
	if kick != nil {
		kick()
	}
	if len(kept) > 0 && c.onOutput != nil {
		c.onOutput(s.name, append([]byte(nil), kept...))
	}
	if stop {
		return 0, ErrStopOutput
	}
	return len(p), nil
}

func (c *capture) result() (stdout, stderr string, truncated bool, total int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.ToValidUTF8(c.stdout.String(), "\uFFFD"), strings.ToValidUTF8(c.stderr.String(), "\uFFFD"), c.truncated, c.total
}

var errCapExceeded = errors.New("output cap exceeded")

// capBuffer keeps at most max bytes. Past it, it either fails the write
// (so the process stops on EPIPE) or, with truncate, drops the rest. The
// buffer is a field, not embedded, so that io.Copy cannot bypass Write
// through bytes.Buffer's ReadFrom.
type capBuffer struct {
	buf      bytes.Buffer
	max      int64
	truncate bool
	over     bool
}

func (b *capBuffer) Write(p []byte) (int, error) {
	room := b.max - int64(b.buf.Len())
	if int64(len(p)) <= room {
		return b.buf.Write(p)
	}
	b.over = true
	if room > 0 {
		b.buf.Write(p[:room])
	}
	if b.truncate {
		return len(p), nil
	}
	return 0, errCapExceeded
}

func (b *capBuffer) Bytes() []byte  { return b.buf.Bytes() }
func (b *capBuffer) String() string { return b.buf.String() }
