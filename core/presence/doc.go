// Package presence owns the presence files that each sidecar keeps under the
// state directory, and the detection of other agents working in a
// repository. Presence is informational: nothing here ever blocks a proposal.
//
// Each sidecar process keeps $XDG_STATE_HOME/sluice/presence/<pid>.json
// (0600, directory 0700, written atomically, a symlinked directory
// refused): the client's name and version and, per repository (at most
// MaxRepos, most recent first), the canonical path, the last call's time and
// tool, and the paths the agent last proposed to change there. The file is
// removed on clean exit. A file whose process has died stays for StaleAfter
// (its agent was "recent"), and is swept after that.
//
// Detect combines the other sidecars' presence files with, on Linux, the
// agent processes found in /proc whose working directory is inside the
// repository (claude, codex, cursor-agent, gemini, aider, …). Such a process
// may have no Sluice sidecar at all, which is exactly when a person wants to
// know about it. Every process is asked only where it works (one readlink
// of /proc/<pid>/cwd); what a process is (stat and command line) is read
// only for the processes working in the repository, their parents and the
// sidecar's ancestors. Nothing is kept between scans: each answer is the
// processes as they are during that scan.
package presence
