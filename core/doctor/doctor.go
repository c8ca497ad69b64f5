package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sluicehq/sluice/core/audit"
	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/gitx"
)

// Status of one check.
type Status string

// Statuses. Warn is for optional parts (Docker is needed only for
// workspaces) and does not make the doctor fail.
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Result of one check.
type Result struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	Hint   string `json:"hint,omitempty"`
}

// Options select how strict the checks are for the calling program.
type Options struct {
	// GatewayRequired makes an unreachable app a failure (the sidecar
	// cannot forward proposals without it). For the app itself a stopped
	// gateway is only a warning: it starts one when it runs.
	GatewayRequired bool
	// KeyCheck verifies the audit signing key; nil means loadKey.
	KeyCheck func(path string) error
	// Engine checks the container engine workspaces run on, and the
	// pinned image and OCI runtime there: the app's (package
	// doctor/engine), which links the engine's client. Nil checks the
	// image and runtime through the app's gateway instead, as the
	// sidecar, which links no container client, runs them.
	Engine func(ctx context.Context, cfg *config.Config) []Result
}

// Run performs every check in order.
func Run(ctx context.Context, cfg *config.Config, opts Options) []Result {
	var out []Result
	out = append(out, checkGit())
	out = append(out, checkIdentity(ctx))
	out = append(out, checkRoots(cfg.AllowedRoots)...)
	out = append(out, checkDir("config directory", cfg.ConfigDir))
	out = append(out, checkDir("state directory", cfg.StateDir))
	out = append(out, checkGateway(ctx, cfg, opts.GatewayRequired))
	if opts.Engine != nil {
		out = append(out, opts.Engine(ctx, cfg)...)
	} else {
		out = append(out, checkWorkspace(ctx, cfg)...)
	}
	out = append(out, checkSandbox(ctx))
	out = append(out, checkKey(cfg, opts.KeyCheck))
	return out
}

// Print writes one line per check and reports whether any failed.
func Print(w io.Writer, results []Result) (failed bool) {
	for _, r := range results {
		line := fmt.Sprintf("%-4s  %-17s %s", r.Status, r.Name, r.Detail)
		if r.Hint != "" && r.Status != OK {
			line += " (hint: " + r.Hint + ")"
		}
		fmt.Fprintln(w, line)
		if r.Status == Fail {
			failed = true
		}
	}
	return failed
}

// checkGit finds git as Sluice runs it (gitx: the first absolute PATH
// entry, symlinks resolved, its version read once).
func checkGit() Result {
	r := Result{Name: "git"}
	run, err := gitx.NewRunner(gitx.RunnerOptions{Timeout: 5 * time.Second})
	if err != nil {
		r.Status, r.Detail, r.Hint = Fail, err.Error(), fmt.Sprintf("install git %s or newer", gitx.MinMergeTree)
		return r
	}
	detail := fmt.Sprintf("git %s at %s", run.Version(), run.Path())
	if !run.Version().AtLeast(gitx.MinMergeTree) {
		r.Status, r.Detail, r.Hint = Fail, detail, fmt.Sprintf("git %s or newer is needed for merge-tree --write-tree", gitx.MinMergeTree)
		return r
	}
	r.Status, r.Detail = OK, detail
	return r
}

func checkDir(name, dir string) Result {
	r := Result{Name: name}
	_, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		r.Status, r.Detail, r.Hint = Warn, dir+" does not exist yet", "it is created (0700) when Sluice first starts"
		return r
	}
	if err := config.CheckPrivateDir(dir); err != nil {
		r.Status, r.Detail, r.Hint = Fail, err.Error(), "chmod 700 "+dir
		return r
	}
	r.Status, r.Detail = OK, dir+" (0700)"
	return r
}

func checkGateway(ctx context.Context, cfg *config.Config, required bool) Result {
	r := Result{Name: "gateway"}
	bad := Warn
	if required {
		bad = Fail
	}
	c, err := gateway.NewClientFromEndpoint(cfg.GatewayFile())
	if err != nil {
		r.Status, r.Detail, r.Hint = bad, "app not reachable: "+err.Error(), "start the app with `make run` or `sluice serve`"
		return r
	}
	h, err := c.Health(ctx)
	if err != nil {
		r.Status, r.Detail, r.Hint = bad, "app at "+c.Addr()+" does not answer: "+err.Error(), "restart the app; a stale gateway.json is replaced on start"
		return r
	}
	r.Status, r.Detail = OK, "app "+h.AppVersion+" at "+c.Addr()
	return r
}

func checkKey(cfg *config.Config, check func(string) error) Result {
	r := Result{Name: "audit key"}
	if !cfg.AuditSigning {
		r.Status, r.Detail, r.Hint = Warn, "signing is turned off in the configuration", "remove auditSigning=false to sign the ledger"
		return r
	}
	if _, err := os.Lstat(cfg.AuditKeyFile); errors.Is(err, os.ErrNotExist) {
		r.Status, r.Detail, r.Hint = Warn, cfg.AuditKeyFile+" does not exist yet", "the app creates it on first start, or run `sluice-sidecar audit keygen`"
		return r
	}
	if check == nil {
		check = loadKey
	}
	if err := check(cfg.AuditKeyFile); err != nil {
		r.Status, r.Detail, r.Hint = Fail, err.Error(), "fix or remove the key file; Sluice never falls back to unsigned"
		return r
	}
	r.Status, r.Detail = OK, cfg.AuditKeyFile+" (private)"
	return r
}

// loadKey reads the audit signing key as the ledger would, permissions
// included, without creating anything.
func loadKey(path string) error {
	_, err := audit.LoadPrivateKey(path)
	return err
}
