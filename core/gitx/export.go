package gitx

import (
	"context"
	"slices"
)

// The executor in core/apply writes to repositories with its own git
// processes, but it must start from the same hardening as every read: the
// same -c overrides, the same scrubbed environment, the same
// neutralisation of the repository's filter drivers and the same refusal
// of custom merge drivers. These wrappers hand those out without letting
// anything outside this package build an unhardened read.

// HardeningConfig returns a copy of the "key=value" settings passed with
// -c to every hardened git process.
func HardeningConfig() []string { return slices.Clone(hardeningConfig) }

// Env returns a copy of the environment every process of this runner
// starts with: a handful of variables kept from the caller, PATH without
// relative entries, and the fixed settings (no prompts, no system config,
// literal pathspecs, C locale, no optional locks).
func (r *Runner) Env() []string { return slices.Clone(r.env) }

// Env returns a copy of the repository-specific additions to the
// environment: the ceiling that keeps discovery inside the allowed root,
// and the overrides that neutralise every configured filter driver.
func (repo *Repo) Env() []string { return slices.Clone(repo.env) }

// RefuseMergeDrivers fails with an unsupported error when merging the
// given commits (full ids) could run a custom merge driver the repository
// configures and selects.
func (repo *Repo) RefuseMergeDrivers(ctx context.Context, commits ...string) error {
	return repo.refuseMergeDrivers(ctx, commits...)
}

// readSubcommands never write to a repository whatever options they get:
// no ref, index, config or worktree change is reachable through them.
var readSubcommands = map[string]bool{
	"for-each-ref": true,
	"cat-file":     true,
	"rev-parse":    true,
	"merge-base":   true,
	"ls-tree":      true,
	"rev-list":     true,
	"diff-tree":    true,
}

// ReadGit runs one of a few subcommands that never write (for-each-ref,
// cat-file, rev-parse, merge-base, ls-tree, rev-list, diff-tree) with the
// full read hardening. opts are trusted options; revs are untrusted
// revisions, checked and placed after --end-of-options. okExit lists exit
// codes that are answers rather than failures. limit caps stdout (zero:
// the runner's cap).
func (repo *Repo) ReadGit(ctx context.Context, sub string, opts, revs []string, okExit []int, limit int64) (*Output, error) {
	if !readSubcommands[sub] {
		return nil, invalidArg("git %s is not a read-only subcommand", sub)
	}
	return repo.git(ctx, &cmd{sub: []string{sub}, opts: slices.Clone(opts), revs: slices.Clone(revs), okExit: okExit, limit: limit})
}
