package proposal

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// Sealed is a proposal's outcome: the exact result approving it produces,
// computed by the app when the proposal arrives and before its card
// opens. It names git objects (trees, blobs, commits) that the app keeps
// reachable in the repository under Ref, so the digest that covers it binds
// an approval to content, not only to refs. The executor produces exactly
// this outcome or nothing.
type Sealed struct {
	// Ref keeps the sealed objects reachable: refs/sluice/sealed/<id>.
	Ref string `json:"ref,omitempty"`
	// Head is what the main working tree's HEAD named when the outcome was
	// sealed: a branch (refs/heads/main), or "HEAD" when it was detached.
	// It is set for an outcome that depends on the checked-out branch (a
	// commit, a patch, a reset or discard, a merge or rebase, which moves
	// the checkout of the branch it moves), and the executor runs the
	// proposal only while HEAD names the same: a card for main never lands
	// on another branch at the same commit.
	Head string `json:"head,omitempty"`
	// Base is the commit the outcome was computed on (HEAD for working-tree
	// operations, the target branch of a merge).
	Base string `json:"base,omitempty"`
	// Before is the tree of what the operation replaces: the base commit's
	// tree, or for operations that throw away uncommitted work, the state of
	// the working tree and index as they were when the proposal arrived.
	Before string `json:"before,omitempty"`
	// After is the tree the result has: the tree the commit will record,
	// the merge result, the working tree after a reset or discard.
	After string `json:"after,omitempty"`
	// Files are the changes from Before to After, each with its blobs.
	Files []FileChange `json:"files,omitempty"`
	// Effect says how to read Files: as content that lands, or as losses.
	Effect Effect `json:"effect,omitempty"`
	// Kept lists changes that move from committed to uncommitted and stay
	// in the working tree (a soft or mixed reset).
	Kept []FileChange `json:"kept,omitempty"`
	// Commits are the commits the operation brings in or sends: a merge's
	// incoming commits, a push's commits the remote receives, a rebase's
	// replayed commits.
	Commits *CommitList `json:"commits,omitempty"`
	// Lost are the commits that become unreachable from the branch (or the
	// remote) when the operation runs.
	Lost *CommitList `json:"lost,omitempty"`
	// Moves are the refs the operation creates, moves or deletes.
	Moves []RefMove `json:"moves,omitempty"`
	// FastForward: a merge that only moves its target forward.
	FastForward bool `json:"fastForward,omitempty"`
	// Untracked lists untracked files the operation deletes or
	// overwrites; their content is in Before.
	Untracked []string `json:"untracked,omitempty"`
	// Uncommitted lists the paths whose uncommitted changes the operation
	// throws away; their content is in Before.
	Uncommitted []string `json:"uncommitted,omitempty"`
	// Work is the uncommitted work the operation throws away, each file as
	// a change from Base's tree to the working tree and index as they were
	// sealed: its status says whether the person modified, added or
	// deleted the file (untracked files are in Untracked too). Losses
	// counts from it.
	Work []FileChange `json:"work,omitempty"`
	// Keeps lists what the operation leaves alone although it was asked
	// to change it, each with why (a branch deletion keeps unmerged
	// branches).
	Keeps []string `json:"keeps,omitempty"`
	// Steps are the outcomes of a plan's steps, each computed on the
	// previous one's result.
	Steps []Sealed `json:"steps,omitempty"`
	// Checkout, for a commit whose content came from a confined session's
	// copy, lists the files of the person's checkout that the executor
	// writes with the committed content (or removes, for a deletion), so
	// that their checkout shows the commit rather than its reverse. Each
	// of them was as Base has it when the proposal was sealed, and must
	// still be when it runs: nothing of the person's is overwritten. A
	// changed file the person has uncommitted work in stays as it is and
	// is named in Keeps.
	Checkout []string `json:"checkout,omitempty"`
	// Indirections say, one sentence each, what in the repository makes
	// the person's own git show other history than its objects hold
	// (replace refs, grafts). Sluice ignores them: the outcome is the
	// objects themselves; the card says that the person's git log or git
	// show would not agree with it.
	Indirections []string `json:"indirections,omitempty"`
	// Below, for a commit stacked on another pending proposal, is that
	// proposal's id: the outcome is sealed on its outcome (Before is its
	// After), so it cannot run until that one has landed and this one is
	// re-sealed on the commit it made.
	Below string `json:"below,omitempty"`
}

// Effect is how a sealed diff reads.
type Effect string

// Effects.
const (
	// EffectLands: Files are what the operation adds to the repository.
	EffectLands Effect = "lands"
	// EffectLoses: Files are uncommitted work the operation throws away
	// (Before is the work as it is, After what remains).
	EffectLoses Effect = "loses"
)

// FileChange is one path's change between two trees.
type FileChange struct {
	// Status is added, modified, deleted, renamed or type_changed.
	Status  string `json:"status"`
	Path    string `json:"path"`
	OldPath string `json:"oldPath,omitempty"`
	OldMode string `json:"oldMode,omitempty"`
	Mode    string `json:"mode,omitempty"`
	OldBlob string `json:"oldBlob,omitempty"`
	Blob    string `json:"blob,omitempty"`
	// Size is the size in bytes of the new blob (of the old one for a
	// deletion).
	Size   int64 `json:"size"`
	Binary bool  `json:"binary,omitempty"`
}

// File change statuses.
const (
	FileAdded       = "added"
	FileModified    = "modified"
	FileDeleted     = "deleted"
	FileRenamed     = "renamed"
	FileTypeChanged = "type_changed"
)

// Git file modes as they appear in trees.
const (
	ModeFile       = "100644"
	ModeExecutable = "100755"
	ModeSymlink    = "120000"
	ModeGitlink    = "160000"
)

// CommitList is a bounded list of commits with their total count.
type CommitList struct {
	Count   int         `json:"count"`
	Commits []CommitRef `json:"commits"`
}

// MaxListedCommits bounds CommitList.Commits.
const MaxListedCommits = 50

// CommitRef names one commit.
type CommitRef struct {
	SHA     string `json:"sha"`
	Subject string `json:"subject"`
}

// RefMove is one ref the operation changes. From is empty when the ref is
// created; To is empty when it is deleted (Delete) or moves to a commit
// the executor makes (a commit, a merge commit, rebased commits).
type RefMove struct {
	Ref    string `json:"ref"`
	From   string `json:"from,omitempty"`
	To     string `json:"to,omitempty"`
	Delete bool   `json:"delete,omitempty"`
	// Repo is set when the ref is in another repository than the proposal's.
	Repo string `json:"repo,omitempty"`
}

// SealedRefPrefix is where the app keeps sealed objects.
const SealedRefPrefix = "refs/sluice/sealed/"

// SealedRef is the ref that keeps proposal id's sealed objects.
func SealedRef(id string) string { return SealedRefPrefix + id }

// BinaryLargeBytes is the size from which a binary file raises the risk.
const BinaryLargeBytes = 1 << 20

func (s *Sealed) validate(id string) error {
	if s == nil {
		return nil
	}
	if s.Ref != "" && s.Ref != SealedRef(id) {
		return invalid("sealed.ref", "must be %s", SealedRef(id))
	}
	for _, sha := range []string{s.Base, s.Before, s.After} {
		if sha != "" && !shaPattern().MatchString(sha) {
			return invalid("sealed", "%q is not a full object id", sha)
		}
	}
	if s.Head != "" && s.Head != "HEAD" && (!strings.HasPrefix(s.Head, "refs/heads/") || strings.ContainsAny(s.Head, "\x00\n\r")) {
		return invalid("sealed.head", "must be a branch ref or HEAD")
	}
	if s.Effect != "" && s.Effect != EffectLands && s.Effect != EffectLoses {
		return invalid("sealed.effect", "must be lands or loses")
	}
	for _, f := range slices.Concat(s.Files, s.Kept, s.Work) {
		if !validRelPath(f.Path, false) || (f.OldPath != "" && !validRelPath(f.OldPath, false)) {
			return invalid("sealed.files", "%q is not a clean repository-relative path", f.Path)
		}
	}
	for _, p := range s.Checkout {
		if !validRelPath(p, false) {
			return invalid("sealed.checkout", "%q is not a clean repository-relative path", p)
		}
	}
	if len(s.Steps) > MaxPlanSteps {
		return invalid("sealed.steps", "too many")
	}
	for i := range s.Steps {
		if err := s.Steps[i].validate(""); err != nil {
			return err
		}
	}
	return nil
}

// SealedPaths lists every path the sealed outcome changes, old paths of
// renames included, sorted.
func (s *Sealed) SealedPaths() []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, f := range s.Files {
		out = append(out, f.Path)
		if f.OldPath != "" {
			out = append(out, f.OldPath)
		}
	}
	out = append(out, s.Untracked...)
	for i := range s.Steps {
		out = append(out, s.Steps[i].SealedPaths()...)
	}
	// Sorted, then each path once: a 20,000-file outcome in one sort
	// instead of a search of the list for every path.
	slices.Sort(out)
	return slices.Compact(out)
}

// RiskReasons are the facts of the sealed outcome that raise a proposal's
// risk, each with the level it raises it to, most severe first, said in
// tense t.
func (s *Sealed) riskReasons(t Tense) []riskReason {
	if s == nil {
		return nil
	}
	var out []riskReason
	// What is lost is one reason, counted by kind from this outcome alone
	// (its steps give their own): the files of a hard reset that differ
	// from the target only because of commits it drops are not work that
	// is thrown away, and those commits are counted once, as commits.
	own := *s
	own.Steps = nil
	if l := own.Losses(); !l.None() {
		out = append(out, riskReason{RiskDestructive, l.Sentence(t)})
	}
	for _, n := range s.Indirections {
		out = append(out, riskReason{RiskHigh, n})
	}
	if s.Effect != EffectLoses {
		for _, f := range s.Files {
			if f.Status == FileDeleted {
				continue
			}
			switch {
			case f.Mode == ModeExecutable && f.OldMode != ModeExecutable:
				out = append(out, riskReason{RiskHigh, "adds an executable file (" + f.Path + ")"})
			case hookLike(f.Path):
				out = append(out, riskReason{RiskHigh, "touches CI or hook configuration (" + f.Path + ")"})
			case f.Mode == ModeSymlink && f.OldMode != ModeSymlink:
				out = append(out, riskReason{RiskMedium, "adds a symbolic link (" + f.Path + ")"})
			case f.Binary && f.Size >= BinaryLargeBytes:
				out = append(out, riskReason{RiskMedium, fmt.Sprintf("adds a %s binary (%s)", HumanBytes(f.Size), f.Path)})
			case f.Size >= BinaryLargeBytes:
				out = append(out, riskReason{RiskMedium, fmt.Sprintf("adds a %s file (%s)", HumanBytes(f.Size), f.Path)})
			}
		}
	}
	for i := range s.Steps {
		out = append(out, s.Steps[i].riskReasons(t)...)
	}
	slices.SortStableFunc(out, func(a, b riskReason) int { return int(b.level) - int(a.level) })
	return out
}

type riskReason struct {
	level Risk
	why   string
}

// hookLike reports whether path is configuration that runs code on
// someone's machine or CI: CI pipelines, git hooks and hook managers.
func hookLike(p string) bool {
	low := strings.ToLower(p)
	base := path.Base(low)
	for _, prefix := range []string{".github/workflows/", ".github/actions/", ".circleci/", ".husky/", ".githooks/",
		".gitlab/", ".buildkite/", ".woodpecker/", ".forgejo/workflows/", ".gitea/workflows/"} {
		if strings.HasPrefix(low, prefix) {
			return true
		}
	}
	switch base {
	case ".gitlab-ci.yml", ".travis.yml", "jenkinsfile", "azure-pipelines.yml", ".pre-commit-config.yaml",
		"lefthook.yml", ".lefthook.yml", "bitbucket-pipelines.yml", ".drone.yml", ".gitattributes", ".gitmodules":
		return true
	}
	return false
}

// HumanBytes writes n as B, KB or MB with one decimal.
func HumanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
