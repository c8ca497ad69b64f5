package gitx

import (
	"fmt"
	"slices"
	"strings"
)

// Profile names one of the ways Sluice runs git. Every git process Sluice
// starts runs under exactly one profile, and a profile is data: the
// options and -c settings every process gets, the variables it keeps from
// the process environment, the ones it fixes, and what an opened
// repository adds. Each profile is built from the shared pieces below, so
// a key common to several is declared once, and all of them are pinned
// by a golden file (testdata/profiles.golden): a change to one is a diff
// a reviewer sees.
//
// A call adds to its profile and never replaces any of it (see Call): the
// runner refuses a call's -c key that the profile sets and a call's
// variable outside a short list. The two per-call allowances that loosen
// a profile, the file transport and safe directories, are named fields.
type Profile int

const (
	// ProfileRead is every inspection an agent can ask for. Nothing that a
	// repository or a user's configuration names is run: no hook,
	// fsmonitor, filter, textconv, external diff, pager, editor,
	// credential helper, signing program or transport; no optional lock
	// is taken and nothing is written.
	ProfileRead Profile = iota + 1
	// ProfileWrite is the executor's own bookkeeping in the person's repository
	// (restore points, ref updates, temporary indexes and worktrees,
	// sealing): ProfileRead's hardening plus settings for writing. It never
	// signs and runs no hook. Identity: the person's configured one
	// unless the call gives Sluice's (restore-point snapshots).
	ProfileWrite
	// ProfileSigned is ProfileWrite with the person's signing configuration: the
	// commits that become the person's without their hooks (merge and
	// squash commits, replayed rebase commits) are signed the way their
	// own would be, with the variables that reach their keys.
	ProfileSigned
	// ProfilePerson is the person's own git: their hooks, identity, signing,
	// filters, credentials and system configuration, with an absolute
	// git and a minimal environment. Only an approved commit or push runs
	// this way (the person approved exactly that), and each call site
	// says why it needs it.
	ProfilePerson
	// ProfileHostileTree is a workspace's repository, whose working tree a
	// container wrote. The repository (config, hooks) is Sluice's own and
	// lives outside the tree; the environment is built from nothing (no
	// global or system configuration, HOME given by the caller) and the
	// identity is the workspace's. The hardening keeps git from running
	// anything the tree's files (.gitattributes, .gitmodules, nested .git
	// directories) name.
	ProfileHostileTree
)

// Profiles lists every profile, in the order the golden file shows them.
var Profiles = []Profile{ProfileRead, ProfileWrite, ProfileSigned, ProfilePerson, ProfileHostileTree}

func (p Profile) String() string {
	if s, ok := profiles[p]; ok {
		return s.name
	}
	return fmt.Sprintf("Profile(%d)", int(p))
}

// profileSpec is a profile's data.
type profileSpec struct {
	name string
	// options come first on every command line.
	options []string
	// config is passed with -c. Command-line configuration is read after
	// every configuration file, includes and all, so no file overrides it,
	// and git passes it on to the git children it starts.
	config []string
	// diffOptions follow the subcommand of diff, log and show.
	diffOptions []string
	// keep are the variables passed on from the process environment when
	// set; every other variable is dropped by construction.
	keep []string
	// given are variables each call must set (Call.Env).
	given []string
	// fixed are set on every process.
	fixed []string
	// ceiling: Repo.Run keeps repository discovery below the allowed root
	// (GIT_CEILING_DIRECTORIES).
	ceiling bool
	// emptyFilters: Repo.Run empties every filter driver the repository's
	// configuration names (GIT_CONFIG_COUNT), so no clean, smudge or
	// process filter runs.
	emptyFilters bool
	// safeDirs: calls may name safe directories, written to a private
	// global configuration file. Only where there is no global
	// configuration of the person's to replace.
	safeDirs bool
	// fileTransport: calls may allow the file transport (a clone or
	// fetch between local repositories).
	fileTransport bool
	// caps bound what a process of the profile may write and what of it
	// a failure reports.
	caps caps
}

// caps are a profile's output bounds, declared here for every profile.
type caps struct {
	// stdout caps a call that sets no Limit; zero means the runner's
	// MaxOutput (which the read path never exceeds).
	stdout int64
	// stderr bounds what is kept of git's stderr.
	stderr int
	// reported bounds the stderr a classified failure carries (Classify).
	reported int
}

var (
	// readCaps: a read answers a model, whose context is small; stdout is
	// the runner's MaxOutput, which a read tool may only lower.
	readCaps = caps{stderr: 16 << 10, reported: 1 << 10}
	// executorCaps: nothing the executor parses comes near 64 MiB of
	// stdout; a hook's output (ProfilePerson) can be long, and the person
	// reads it on the card.
	executorCaps = caps{stdout: 64 << 20, stderr: 64 << 10, reported: 4 << 10}
	// workspaceCaps: a workspace's clone, diff and commit; calls that
	// read a blob or a diff lower stdout.
	workspaceCaps = caps{stdout: 64 << 20, stderr: 16 << 10, reported: 1 << 10}
)

// The pieces. Each key appears in exactly one of them; a test checks it.
var (
	// noPrograms switches off every program that configuration (the
	// repository's, or a user file that the repository's attributes
	// select from) can make git run, and recursion into submodules,
	// whose configuration would be read the same way.
	noPrograms = []string{
		"core.fsmonitor=false",
		// No hook exists under /dev/null (post-index-change,
		// reference-transaction and pre-auto-gc included).
		"core.hooksPath=/dev/null",
		"credential.helper=",
		"core.askPass=",
		"core.sshCommand=",
		"core.editor=true",
		"sequence.editor=true",
		// log.showSignature makes log and show run gpg.program.
		"log.showSignature=false",
		"submodule.recurse=false",
		"fetch.recurseSubmodules=false",
		"status.submoduleSummary=false",
	}
	// noCommandTransport refuses the transports that run a command or
	// talk to inherited descriptors; the person's own git keeps every
	// other transport (a push needs one).
	noCommandTransport = []string{
		"protocol.ext.allow=never",
		"protocol.fd.allow=never",
	}
	// noNetworkTransport refuses every other transport by name: a
	// protocol.<name>.allow in a configuration file outranks the
	// protocol.allow default, so each is set. A call that clones or
	// fetches between local repositories allows the file transport for
	// itself (Call.AllowFileTransport), after these.
	noNetworkTransport = []string{
		"protocol.allow=never",
		"protocol.file.allow=never",
		"protocol.ssh.allow=never",
		"protocol.git.allow=never",
		"protocol.http.allow=never",
		"protocol.https.allow=never",
	}
	// noHousekeeping: nothing starts gc or maintenance in the background.
	noHousekeeping = []string{
		"gc.auto=0",
		"maintenance.auto=false",
	}
	// plainOutput: no pager (--no-pager covers git itself, this its git
	// children) and no colour.
	plainOutput = []string{
		"core.pager=cat",
		"color.ui=false",
	}
	// noSigning: Sluice's own objects are not the person's commits or
	// tags, and a signing program is a program.
	noSigning = []string{
		"commit.gpgSign=false",
		"tag.gpgSign=false",
	}
	// parseable keeps output in the shape the parsers read.
	parseable = []string{
		"core.quotePath=false",
		"diff.noprefix=false",
		"diff.mnemonicPrefix=false",
		"diff.relative=false",
		"diff.colorMoved=false",
		"log.decorate=false",
		"log.showRoot=true",
		"i18n.logOutputEncoding=UTF-8",
		"advice.detachedHead=false",
	}
	// writing: a rebase replays exactly the approved branch and moves
	// nothing but it; recorded resolutions and guessed remotes would
	// change a computed result behind the person's back.
	writing = []string{
		"rebase.autoStash=false",
		"rebase.autoSquash=false",
		"rebase.updateRefs=false",
		"rebase.missingCommitsCheck=ignore",
		"merge.autoStash=false",
		"rerere.enabled=false",
		"worktree.guessRemote=false",
	}
	// ownRepository are settings of a repository Sluice made itself (a
	// workspace's): its bytes round-trip exactly (no line-ending
	// conversion), symlinks are symlinks, a new repository's branch is
	// main, and the identity comes from the environment. They are not
	// hardening, and the person's repository keeps its own values: its
	// core.autocrlf and core.symlinks describe the person's files and
	// filesystem, and the executor must commit what the person's git
	// would.
	ownRepository = []string{
		"core.autocrlf=false",
		"core.symlinks=true",
		"init.defaultBranch=main",
		"user.useConfigOnly=false",
	}

	// hardened is what every profile but Person shares.
	hardened = slices.Concat(noPrograms, noCommandTransport, noNetworkTransport, noHousekeeping, plainOutput, parseable)

	// hardenedOptions: no pager, no optional lock (a read must not write
	// the index it refreshed), pathspecs taken literally.
	hardenedOptions = []string{"--no-pager", "--no-optional-locks", "--literal-pathspecs"}
	personOptions   = []string{"--no-pager", "--literal-pathspecs"}

	// noExternalDiff: diff, log and show can run diff.external, a
	// diff.<driver>.command or a textconv program. (diff-tree and friends
	// never run external diffs; textconv only with --textconv.)
	noExternalDiff = []string{"--no-ext-diff", "--no-textconv"}

	// personEnv are the person's own variables that git needs to find
	// their configuration and temporary directory.
	personEnv = []string{"HOME", "USER", "LOGNAME", "TMPDIR", "TZ", "XDG_CONFIG_HOME", "SYSTEMROOT", "USERPROFILE"}
	// signingEnv are variables a signing program (or, for a push, ssh)
	// needs to reach the person's keys: the ssh agent, gpg's home and
	// agent, a display for pinentry.
	signingEnv = []string{"SSH_AUTH_SOCK", "GNUPGHOME", "GPG_TTY", "GPG_AGENT_INFO", "DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS"}
	// baseEnv is set on every process: nothing prompts or waits for an
	// editor, no optional locks, literal pathspecs, the C locale.
	baseEnv = []string{
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_LITERAL_PATHSPECS=1",
		"GIT_ADVICE=0",
		"GIT_EDITOR=true",
		"GIT_SEQUENCE_EDITOR=true",
		"GIT_MERGE_AUTOEDIT=no",
		"LC_ALL=C",
		"LANG=C",
	}
	// onlyObjects makes every git see the objects as they are. A replace
	// ref (refs/replace/<id>) makes git read another object wherever id is
	// named, and a graft (info/grafts) gives a commit other parents: both
	// would let a card's diff, commits and losses differ from what lands,
	// and from what another git, or Sluice's own in process, reads. Replace
	// refs are off, and the graft file is one that cannot exist (a path
	// below /dev/null): git reads no graft then, and says nothing about
	// it. The person's own git (a commit or push they approved) sees the
	// same objects, so what it writes on top is what the card showed.
	onlyObjects = []string{"GIT_NO_REPLACE_OBJECTS=1", "GIT_GRAFT_FILE=" + NoGraftFile}
	// noSystemEnv keeps the system configuration and attributes out.
	noSystemEnv = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_ATTR_NOSYSTEM=1"}
	// workspaceEnv: no global configuration at all, and the identity of
	// a workspace's commits, which is not the person's: those commits are
	// proposals, and the person's identity is applied only when a human
	// approves them.
	workspaceEnv = []string{
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=Sluice workspace", "GIT_AUTHOR_EMAIL=workspace@sluice.invalid",
		"GIT_COMMITTER_NAME=Sluice workspace", "GIT_COMMITTER_EMAIL=workspace@sluice.invalid",
	}
)

// NoGraftFile is the graft file every git Sluice runs is given: a path
// that cannot exist, so no graft is read (see onlyObjects).
const NoGraftFile = "/dev/null/no-grafts"

// ReadMarker is in the environment of every read-profile process. Such a
// process takes no lock (no optional locks, and it writes nothing), so a
// lock found beside it is not its: the executor's check for a running git
// that may hold a lock (core/apply) passes over processes carrying it.
const ReadMarker = "SLUICE_GIT_PROFILE=read"

var profiles = map[Profile]profileSpec{
	ProfileRead: {
		name: "read", options: hardenedOptions, config: slices.Concat(hardened, noSigning), diffOptions: noExternalDiff,
		keep: personEnv, fixed: slices.Concat(baseEnv, onlyObjects, noSystemEnv, []string{ReadMarker}), ceiling: true, emptyFilters: true, caps: readCaps,
	},
	ProfileWrite: {
		name: "write", options: hardenedOptions, config: slices.Concat(hardened, noSigning, writing), diffOptions: noExternalDiff,
		keep: personEnv, fixed: slices.Concat(baseEnv, onlyObjects, noSystemEnv), ceiling: true, emptyFilters: true, caps: executorCaps,
	},
	ProfileSigned: {
		name: "signed", options: hardenedOptions, config: slices.Concat(hardened, writing), diffOptions: noExternalDiff,
		keep: slices.Concat(personEnv, signingEnv), fixed: slices.Concat(baseEnv, onlyObjects, noSystemEnv), ceiling: true, emptyFilters: true, caps: executorCaps,
	},
	ProfilePerson: {
		name: "person", options: personOptions, config: slices.Concat(plainOutput, noHousekeeping, noCommandTransport),
		keep: slices.Concat(personEnv, signingEnv), fixed: slices.Concat(baseEnv, onlyObjects), ceiling: true, caps: executorCaps,
	},
	ProfileHostileTree: {
		name: "hostile-tree", options: hardenedOptions, config: slices.Concat(hardened, noSigning, ownRepository), diffOptions: noExternalDiff,
		given: []string{"HOME"}, fixed: slices.Concat(baseEnv, onlyObjects, noSystemEnv, workspaceEnv), safeDirs: true, fileTransport: true, caps: workspaceCaps,
	},
}

// callEnv are the variables a call may add: where the index and objects
// are, Sluice's identity for its own commits, and a tighter ceiling.
// Anything else (GIT_CONFIG_*, GIT_DIR, GIT_EXEC_PATH, …) would let a
// call step around its profile.
var callEnv = []string{
	"GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
	"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
	"GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE",
	"GIT_CEILING_DIRECTORIES",
}

// configKey is the lower-cased key of a "key=value" setting (git's
// section and variable names are case-insensitive).
func configKey(kv string) string {
	k, _, _ := strings.Cut(kv, "=")
	return strings.ToLower(k)
}

// checkCall refuses a call that would replace part of its profile.
func (s profileSpec) checkCall(c *Call) error {
	for _, kv := range c.Config {
		k := configKey(kv)
		if strings.HasPrefix(k, "protocol.") || k == "safe.directory" {
			return fmt.Errorf("gitx: a call may not set %s with -c; use AllowFileTransport or SafeDirs", k)
		}
		for _, p := range s.config {
			if configKey(p) == k {
				return fmt.Errorf("gitx: a call may not set %s: the %s profile sets it", k, s.name)
			}
		}
	}
	for _, kv := range c.Env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(callEnv, k) && !slices.Contains(s.given, k) {
			return fmt.Errorf("gitx: a call may not set %s", k)
		}
		for _, f := range s.fixed {
			if strings.HasPrefix(f, k+"=") {
				return fmt.Errorf("gitx: a call may not set %s: the %s profile fixes it", k, s.name)
			}
		}
	}
	for _, k := range s.given {
		if !slices.ContainsFunc(c.Env, func(kv string) bool { return strings.HasPrefix(kv, k+"=") }) {
			return fmt.Errorf("gitx: the %s profile needs %s from the call", s.name, k)
		}
	}
	if c.AllowFileTransport && !s.fileTransport {
		return fmt.Errorf("gitx: the %s profile never allows a transport", s.name)
	}
	if len(c.SafeDirs) > 0 && !s.safeDirs {
		return fmt.Errorf("gitx: the %s profile keeps the person's global configuration; it takes no safe directories", s.name)
	}
	return nil
}
