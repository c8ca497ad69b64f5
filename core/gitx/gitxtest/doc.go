// Package gitxtest builds real git repositories in temporary directories
// for tests and benchmarks: ordinary fixtures (merge and rebase in
// progress, detached HEAD, submodules, stashes, worktrees, binary and
// unicode paths, empty repositories), a hostile repository whose every
// configurable program writes a marker file, and large generated
// repositories made with git fast-import.
//
// It drives the real git CLI with a fixed identity and clock, never the
// hardened runner: fixtures must be able to write.
package gitxtest
