// Package gitx owns every git process that Sluice starts: one runner
// (run.go: absolute git binary, a process group killed as a whole, time
// limits, output caps, one shape of failure) under named profiles
// (profile.go: ProfileRead, ProfileWrite, ProfileSigned, ProfilePerson,
// ProfileHostileTree), each pinned by testdata/profiles.golden, and the
// read-only inspections built on ProfileRead (brief, status, history,
// refs, diffs, conflicts, fleets). core/apply and core/workspace start
// their git through Runner.Run and Repo.Run; nothing else starts git.
//
// Nothing the inspections do changes a repository: not refs, not the
// index, not the working tree, not config, and they take no optional
// locks.
//
// The contract every read keeps, whatever the caller asked:
//
//   - git is resolved once to an absolute, symlink-free path from the
//     absolute entries of PATH; a git inside a repository is never run.
//   - The environment is built from an allowlist (HOME, USER, TMPDIR, TZ,
//     XDG_CONFIG_HOME, an absolute-only PATH), so GIT_DIR, GIT_WORK_TREE,
//     GIT_INDEX_FILE, GIT_CONFIG_*, GIT_EXEC_PATH, GIT_EXTERNAL_DIFF,
//     GIT_ASKPASS, SSH_ASKPASS, GIT_SSH*, PAGER, LD_PRELOAD and the rest never
//     reach git; GIT_OPTIONAL_LOCKS=0, GIT_TERMINAL_PROMPT=0,
//     GIT_CONFIG_NOSYSTEM=1, GIT_ATTR_NOSYSTEM=1 and literal pathspecs are set.
//   - Command-line config (read after every file) switches off fsmonitor,
//     hooks, pagers, credential helpers, askpass, core.sshCommand, every
//     transport (so neither ext:: nor a lazy fetch can run anything) and
//     log.showSignature (gpg); every configured filter driver is emptied
//     (GIT_CONFIG_COUNT, so that a driver name cannot be mis-split); diff,
//     log and show always get --no-ext-diff --no-textconv; custom merge
//     drivers make the merge prediction refuse rather than run them.
//   - --no-pager --no-optional-locks on every process; under every
//     profile, revisions (Call.Revs) follow --end-of-options and paths
//     (Call.Paths) follow --; one that begins with "-" is refused with
//     invalid_argument before a process starts.
//   - A failed run is classified once (Classify) into the errcode error
//     that the read tools, the executor and the workspace all return.
//   - Each process runs in its own process group under a time limit and an
//     output cap; the whole group is killed when either is reached. A capped
//     result fails with output_limit unless the caller truncates honestly
//     and reports totals.
//   - Repository paths are confined to the allowed roots (Roots.Confine),
//     canonicalised, and discovery cannot climb above the root that allows
//     them (GIT_CEILING_DIRECTORIES, then a second check of the top level).
//
// gitxtest builds the fixtures, including a hostile repository, that the
// tests use to hold this contract.
package gitx
