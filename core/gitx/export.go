package gitx

import (
	"context"
	"slices"

	"github.com/sluicehq/sluice/core/errcode"
)

// The executor in core/apply runs its own git processes through Repo.Run
// with the Write, Signed and Person profiles; it starts from the same
// hardening as every read (the profiles share it), the same
// neutralisation of the repository's filter drivers and the same refusal
// of custom merge drivers.

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
		return nil, errcode.New(errcode.InvalidArgument, "git %s is not a read-only subcommand", sub)
	}
	return repo.git(ctx, &cmd{sub: []string{sub}, opts: slices.Clone(opts), revs: slices.Clone(revs), okExit: okExit, limit: limit})
}
