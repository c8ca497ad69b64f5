package workspace

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// Runs carried out for someone else. A sidecar does not run containers
// itself: its Manager's Runtime sends each call to the app
// (gateway.Runtime), which runs it with the app's own runtime. The app
// holds the store too, so it does not take a spec's word for anything:
// CheckSpec re-derives from the store every path a container would see
// and compares the rest with what the app has configured. A spec that
// differs in any field from the one this store's own Run would make is
// refused, and nothing is created. The granted secrets' values are the one
// thing not compared but replaced: AcceptRun runs the spec with the
// store's own values, so nothing a sidecar sends under a granted name
// reaches a run or a cluster's copy.

// RunPolicy is what the app has configured now (config.json, which the
// app and every sidecar follow): the image runs use and their OCI runtime.
type RunPolicy struct {
	Image       string
	RuntimeName string
}

// runIDRe is a run's id as Run makes it (a UUID).
var runIDRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
})

// ValidRunID reports whether s has the form of a run's id.
func ValidRunID(s string) bool { return runIDRe().MatchString(s) }

// errSpecRefused is the refusal of a spec field that does not match.
func errSpecRefused(field, why string) *errcode.Error {
	return &errcode.Error{Code: errcode.Forbidden, Msg: "the container spec is refused: " + why, Data: map[string]string{"field": field}}
}

// CheckSpec verifies that spec is a run this store would make for a
// ready workspace that agent created, under pol and within the Manager's
// limits: the workspace exists and is open, its owner is agent, the tree
// and repository paths are exactly that workspace's, the store, image,
// OCI runtime and container user are this app's, the limits are within
// the configured ones, the network is none or (for a workspace a person
// granted egress) the runtime's egress network, argv and environment are
// well formed, and the entries named secret are the granted secrets, each
// in the environment (its value is AcceptRun's to set). Errors are typed: InvalidArgument for malformed fields,
// WorkspaceNotFound for a workspace that is not there or not the agent's,
// Forbidden for a field that names something else than this store's.
func (m *Manager) CheckSpec(ctx context.Context, agent string, spec ContainerSpec, pol RunPolicy) error {
	if !proposal.ValidID(spec.WorkspaceID) {
		return ErrInvalidID
	}
	if !ValidRunID(spec.RunID) {
		return errcode.New(errcode.InvalidArgument, "the run id must be a UUID")
	}
	if spec.StoreKey != m.storeKey {
		return errSpecRefused("StoreKey", "it names another workspace store")
	}
	w, err := m.readMeta(spec.WorkspaceID)
	if err != nil {
		return err
	}
	// Another agent's workspace looks like no workspace at all, as it does
	// to the sidecar's tools.
	if w.Agent == "" || w.Agent != agent {
		return &errcode.Error{Code: errcode.WorkspaceNotFound, Msg: "no workspace with this id belongs to this agent"}
	}
	if w.State != StateReady {
		return ErrNotReady
	}
	if err := m.checkSpecPlaces(w, spec); err != nil {
		return err
	}
	if err := checkSpecPolicy(spec, pol); err != nil {
		return err
	}
	if err := spec.Limits.within(m.opts.Limits); err != nil {
		return err
	}
	if err := checkArgv(spec.Argv); err != nil {
		return err
	}
	if err := checkSpecEnv(spec.Env, spec.Network != ""); err != nil {
		return err
	}
	if err := m.checkSpecNetwork(ctx, w, spec.Network); err != nil {
		return err
	}
	return m.checkSpecSecrets(w.ID, spec)
}

// checkSpecPlaces compares what the container would see of the host and
// who it runs as with what the store says.
func (m *Manager) checkSpecPlaces(w *Workspace, spec ContainerSpec) error {
	if spec.TreePath != m.treeDir(w.ID) {
		return errSpecRefused("TreePath", "the tree is not this workspace's")
	}
	wantGit := ""
	if w.GitVisible {
		wantGit = m.gitDir(w.ID)
	}
	if spec.GitDirPath != wantGit {
		return errSpecRefused("GitDirPath", "the repository is not this workspace's")
	}
	if spec.User != m.ContainerUser() {
		return errSpecRefused("User", "the container user is not the store's")
	}
	return nil
}

func checkSpecPolicy(spec ContainerSpec, pol RunPolicy) error {
	if pol.Image == "" {
		return &errcode.Error{Code: errcode.Unsupported, Msg: "no workspace image is configured"}
	}
	if spec.Image != pol.Image {
		return errSpecRefused("Image", "the image is not the configured workspace image")
	}
	if spec.RuntimeName != pol.RuntimeName {
		return errSpecRefused("RuntimeName", "the OCI runtime is not the configured one")
	}
	return nil
}

// checkSpecEnv accepts the environment Run builds: the fixed PATH, HOME
// and LANG first, then the request's and the granted secrets' variables
// (never a reserved name, never LD_*), then the proxy settings when the
// run is on the egress network.
func checkSpecEnv(env []string, networked bool) error {
	fixed := []string{"PATH=" + containerPath, "HOME=" + containerHome, "LANG=" + containerLang}
	if len(env) < len(fixed) || !slices.Equal(env[:len(fixed)], fixed) {
		return errSpecRefused("Env", "the fixed environment (PATH, HOME, LANG) is not the run's")
	}
	proxy := []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"}
	if len(env) > len(fixed)+maxEnvVars+maxSecretsPerWS+len(proxy) {
		return errcode.New(errcode.InvalidArgument, "the environment has too many variables")
	}
	seen := map[string]bool{}
	for _, kv := range env[len(fixed):] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !ValidEnvName(k) || strings.HasPrefix(k, "LD_") || strings.ContainsRune(v, 0) || seen[k] {
			return errSpecRefused("Env", "an environment entry is malformed, repeated or may not be set")
		}
		seen[k] = true
		if slices.Contains(reservedEnv, k) && !(networked && slices.Contains(proxy, k)) {
			return errSpecRefused("Env", "the environment sets "+k+", which only Sluice sets")
		}
	}
	return nil
}

// checkSpecSecrets requires the spec to name as secret exactly the
// entries Run names: the workspace's granted secrets and, on the egress
// network, the proxy variables, which carry the run's credentials. A
// runtime keeps those out of what others can read (a pod spec), so a spec
// naming fewer could publish them. Every granted secret must be in the
// environment, as Run puts it there; its value is not checked here, since
// it is never the sidecar's to give (AcceptRun puts the store's in).
func (m *Manager) checkSpecSecrets(id string, spec ContainerSpec) error {
	secrets, err := m.secretValues(id)
	if err != nil {
		return err
	}
	_, err = grantedEnv(secrets, spec)
	return err
}

// grantedEnv checks spec's secret entries against the workspace's granted
// secrets (as checkSpecSecrets) and returns its environment with each
// granted secret's value taken from secrets, whatever the spec carried.
func grantedEnv(secrets map[string]string, spec ContainerSpec) ([]string, error) {
	want := sortedKeys(secrets)
	if spec.Network != "" {
		want = append(want, "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
	}
	if !slices.Equal(spec.SecretEnv, want) {
		return nil, errSpecRefused("SecretEnv", "the secret entries are not the workspace's granted secrets")
	}
	env := slices.Clone(spec.Env)
	found := 0
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if v, ok := secrets[k]; ok {
			env[i] = k + "=" + v
			found++ // checkSpecEnv: each name once
		}
	}
	if found != len(secrets) {
		return nil, errSpecRefused("Env", "the environment lacks a granted secret")
	}
	return env, nil
}

// checkSpecNetwork allows no network, or the runtime's egress network for
// a workspace a person granted egress.
func (m *Manager) checkSpecNetwork(ctx context.Context, w *Workspace, network string) error {
	if network == "" {
		return nil
	}
	if len(w.Egress) == 0 {
		return ErrEgressDenied
	}
	if m.opts.Runtime == nil {
		return ErrNoRuntime
	}
	en, err := m.opts.Runtime.EgressNetwork(ctx)
	if err != nil {
		return err
	}
	if network != en.Name {
		return errSpecRefused("Network", "the network is not the egress network")
	}
	return nil
}

// errRunNotHeld refuses a run that no process of this store is carrying
// out: the spec may be well formed, but it is not the run of a Run.
var errRunNotHeld = &errcode.Error{Code: errcode.Forbidden,
	Msg:  "the run is not in progress in its workspace: the app carries out only a run whose workspace a sidecar's Run holds for it",
	Data: map[string]string{"field": "RunID"}}

// AcceptRun admits a run the app carries out for a sidecar. The spec must
// pass CheckSpec, and the run must be the one in progress in its
// workspace: a Run holds the workspace's lock exclusively from before its
// run record is written until after the runtime returns, so the lock must
// be held (a shared lock cannot be taken) and the running record must name
// this run. A spec sent while Seal, Destroy or a file tool holds the
// workspace (no running record of this run), or by a process that holds
// nothing, is refused, and so is a run admitted before (each run is
// carried out once) and a copy of the run in progress. A run of a
// workspace whose last run is still being ended here (its sidecar died,
// and the kernel released that sidecar's lock) waits for it before
// anything is checked (awaitRunEnd); a Stop or Destroy meanwhile refuses
// it. A dead sidecar's lock is released by the kernel, so a run cannot be
// admitted for a process that is gone.
//
// The granted secrets' values are never the sidecar's to give: the
// returned spec, the one to run, is spec with each granted secret's value
// read from the store once the run is known to hold the workspace (no
// grant or revoke can come until it ends), whatever value spec carried.
// A sidecar can name only the granted secrets, and the runtime writes
// nothing of its choosing under them (a cluster's copy, a container's
// environment).
//
// The admitted run is listed as the workspace's active run, where Stop and
// Destroy find and cancel it: the returned context ends then, and release
// (which the caller calls when the run is over) unlists it.
func (m *Manager) AcceptRun(ctx context.Context, agent string, spec ContainerSpec, pol RunPolicy) (context.Context, ContainerSpec, func(), error) {
	if err := m.CheckSpec(ctx, agent, spec, pol); err != nil {
		return nil, ContainerSpec{}, nil, err
	}
	// A spec that names no run recorded running, or lacks that run's key,
	// is refused at once; whatever is checked below is checked (again)
	// once the run before has ended: the lock and the record then are
	// this run's.
	if !m.runRecordedRunning(spec) {
		return nil, ContainerSpec{}, nil, errRunNotHeld
	}
	stops, err := m.awaitRunEnd(ctx, spec.WorkspaceID, spec.RunID)
	if err != nil {
		return nil, ContainerSpec{}, nil, err
	}
	unlock, err := m.lockWS(spec.WorkspaceID, false)
	if err == nil {
		unlock()
		return nil, ContainerSpec{}, nil, errRunNotHeld
	}
	if !errors.Is(err, ErrLocked) {
		return nil, ContainerSpec{}, nil, err
	}
	if !m.runRecordedRunning(spec) {
		return nil, ContainerSpec{}, nil, errRunNotHeld
	}
	if err := m.syncBeforeRun(ctx, spec.WorkspaceID); err != nil {
		return nil, ContainerSpec{}, nil, err
	}
	secrets, err := m.secretValues(spec.WorkspaceID)
	if err != nil {
		return nil, ContainerSpec{}, nil, err
	}
	if spec.Env, err = grantedEnv(secrets, spec); err != nil {
		return nil, ContainerSpec{}, nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stops[spec.WorkspaceID] != stops {
		return nil, ContainerSpec{}, nil, errStoppedWhileWaiting
	}
	if m.active[spec.WorkspaceID] != nil {
		return nil, ContainerSpec{}, nil, ErrLocked
	}
	if slices.Contains(m.admitted[spec.WorkspaceID], spec.RunID) {
		// A run admitted before is over here, though its record may say
		// running a moment longer (its Run rewrites it once the end came):
		// each run is carried out once.
		return nil, ContainerSpec{}, nil, errRunNotHeld
	}
	if ctx.Err() != nil {
		// The sidecar went away while this was checked: the lock it held
		// may be another's by now.
		return nil, ContainerSpec{}, nil, errRunNotHeld
	}
	if m.copies != nil && len(secrets) > 0 {
		// The runtime writes the workspace's copy with the values read
		// above. Should the sidecar that holds the workspace die and a
		// revoke come while that write is under way, it could put a
		// revoked key back: the mark has the next sync (the sweep, the
		// next run, start-up) bring the copy back to the grants under the
		// workspace's lock, after this run. A run with no granted secret
		// writes no copy (its proxy credentials are its own Secret's), so
		// its sync would cost a cluster call for nothing.
		if err := m.markCopy(spec.WorkspaceID); err != nil {
			return nil, ContainerSpec{}, nil, err
		}
	}
	kept := append(m.admitted[spec.WorkspaceID], spec.RunID)
	m.admitted[spec.WorkspaceID] = kept[max(0, len(kept)-admittedKept):]
	ctx, release := m.listActiveLocked(ctx, spec.WorkspaceID, spec.RunID)
	spec.RunKey = "" // the run's own; the runtime has no use for it
	return ctx, spec, release, nil
}

// admittedKept is how many of a workspace's last admitted runs are kept
// in Manager.admitted.
const admittedKept = 16

// runRecordedRunning reports whether the workspace's evidence holds the
// running record of spec's run (Run writes it before the runtime is
// called) and spec holds that run's key: the spec is the one the Run
// made, not a copy of its record's id with another command.
func (m *Manager) runRecordedRunning(spec ContainerSpec) bool {
	b, err := os.ReadFile(filepath.Join(m.runsDir(spec.WorkspaceID), spec.RunID+".json"))
	if err != nil {
		return false
	}
	var rec RunResult
	if json.Unmarshal(b, &rec) != nil || !rec.Running || rec.ID != spec.RunID || rec.WorkspaceID != spec.WorkspaceID {
		return false
	}
	return spec.RunKey != "" && rec.KeyHash != "" && subtle.ConstantTimeCompare([]byte(runKeyHash(spec.RunKey)), []byte(rec.KeyHash)) == 1
}

// OutputStopAt is how much output (both streams together) a run with
// limits l may produce before it is stopped for flooding (OutputStopped):
// Run stops it there, and so does the app carrying a sidecar's run, which
// does not count on the sidecar to.
func OutputStopAt(l Limits) int64 {
	return max(l.OutputBytes*outputStopFactor, outputStopFloor)
}
