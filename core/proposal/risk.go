package proposal

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// Risk is how much an approval can cost if it is wrong. The order matters:
// a plan is as risky as its riskiest step.
type Risk int

// Risk levels, least to most.
const (
	// RiskLow adds without moving anything that exists: a new branch, a
	// worktree, a commit on top of a branch.
	RiskLow Risk = iota + 1
	// RiskMedium changes content in a recoverable way: merge, patch,
	// ordinary push, recording a submodule pointer.
	RiskMedium
	// RiskHigh moves refs or checkouts in ways that need care to undo.
	RiskHigh
	// RiskDestructive can lose work: hard reset, discard, force-with-lease
	// push, rebase of a pushed branch, branch deletion. Cards ask for a
	// strong confirmation and policies never auto-approve it.
	RiskDestructive
)

var riskNames = map[Risk]string{RiskLow: "low", RiskMedium: "medium", RiskHigh: "high", RiskDestructive: "destructive"}

// String is the risk's name.
func (r Risk) String() string {
	if n, ok := riskNames[r]; ok {
		return n
	}
	return fmt.Sprintf("risk(%d)", int(r))
}

// ParseRisk is the inverse of String.
func ParseRisk(s string) (Risk, error) {
	for r, n := range riskNames {
		if n == s {
			return r, nil
		}
	}
	return 0, fmt.Errorf("%w: risk: %q is not one of low, medium, high, destructive", ErrInvalid, s)
}

// MarshalText writes the name.
func (r Risk) MarshalText() ([]byte, error) {
	if _, ok := riskNames[r]; !ok {
		return nil, fmt.Errorf("invalid risk %d", int(r))
	}
	return []byte(r.String()), nil
}

// UnmarshalText reads the name.
func (r *Risk) UnmarshalText(b []byte) error {
	v, err := ParseRisk(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// A directory that holds HEAD beside config, objects/ or refs/ is a git
// repository to git itself (a bare one): git run in it, or in a folder
// below it, uses its config, and core.fsmonitor, core.sshCommand,
// core.hooksPath and the like run programs from there. A commit that adds
// one plants that config in every checkout of the branch, so the sealed
// outcome's paths are read for the shape, whatever the directory is
// called. The comparison ignores case: on a case-insensitive file system
// "head" is HEAD to git.

// embeddedRepos lists the directories of s's landing files that make up
// a bare repository, sorted, plan steps included.
func (s *Sealed) embeddedRepos() []string {
	if s == nil {
		return nil
	}
	type parts struct{ head, config, store bool }
	dirs := map[string]*parts{}
	at := func(dir string) *parts {
		if dirs[dir] == nil {
			dirs[dir] = &parts{}
		}
		return dirs[dir]
	}
	if s.Effect != EffectLoses {
		for _, f := range s.Files {
			if f.Status == FileDeleted {
				continue
			}
			elems := strings.Split(f.Path, "/")
			last := len(elems) - 1
			dir := strings.Join(elems[:last], "/")
			switch strings.ToLower(elems[last]) {
			case "head":
				at(dir).head = true
			case "config":
				at(dir).config = true
			}
			for i, e := range elems[:last] {
				if low := strings.ToLower(e); low == "objects" || low == "refs" {
					at(strings.Join(elems[:i], "/")).store = true
				}
			}
		}
	}
	var out []string
	for dir, p := range dirs {
		if p.head && (p.config || p.store) {
			if dir == "" {
				dir = "the repository's top folder"
			}
			out = append(out, dir)
		}
	}
	for i := range s.Steps {
		out = append(out, s.Steps[i].embeddedRepos()...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// allRiskReasons are the sealed outcome's reasons (riskReasons) with the
// embedded repositories it adds and its size, most severe first, said in
// tense t.
func (s *Sealed) allRiskReasons(t Tense) []riskReason {
	out := s.riskReasons(t)
	for _, dir := range s.embeddedRepos() {
		out = append(out, riskReason{RiskHigh, "adds a git repository's directory, " + dir +
			" (a bare repository: its config can run programs when git is used in it)"})
	}
	if n := s.landingFiles(); n >= SizeMediumFiles {
		level := RiskMedium
		if n >= SizeHighFiles {
			level = RiskHigh
		}
		out = append(out, riskReason{level, say(t, "touches ", "touched ", "would have touched ") + Count(n, "file")})
	}
	slices.SortStableFunc(out, func(a, b riskReason) int { return int(b.level) - int(a.level) })
	return out
}

// How many files a change may touch before its size alone raises its
// risk. A person reads every line of a change of a few dozen files on a
// card; from about a hundred they skim, and a mistake (a stray edit, a
// file that should not be there) can pass unseen, so such a change is at
// least medium and no rule that approves only low-risk work approves it.
// A thousand files is a codemod, a vendored tree or generated code: no
// one reads it whole, and what it does must be checked some other way
// (tests, a rerun of the generator), so it is high, like the other
// changes that need care to check.
const (
	SizeMediumFiles = 100
	SizeHighFiles   = 1000
)

// landingFiles counts the distinct paths s's content changes land on,
// plan steps included (a file two steps change is one file). Losses are
// counted apart (Losses).
func (s *Sealed) landingFiles() int {
	if s == nil {
		return 0
	}
	seen := map[string]bool{}
	var walk func(*Sealed)
	walk = func(s *Sealed) {
		if s.Effect != EffectLoses {
			for _, f := range s.Files {
				seen[f.Path] = true
			}
		}
		for i := range s.Steps {
			walk(&s.Steps[i])
		}
	}
	walk(s)
	return len(seen)
}

// RiskWhyIn is p's risk and one line saying why it is that, said in tense
// t (History says what a proposal did, a pending card what it will do).
// The sealed outcome decides where it knows better than the operation:
// it can raise the risk (an executable file, work that is lost, a change
// too large to read) and it can lower it (a rebase that only moves its
// branch forward rewrites nothing; deleting branches whose commits are
// all on other branches loses nothing).
func (p Proposal) RiskWhyIn(t Tense) (Risk, string) {
	if p.Args == nil {
		return RiskHigh, "the proposal has no arguments"
	}
	r, why := opRisk(p.Args, p.Pinned, p.Sealed, t)
	if reasons := p.Sealed.allRiskReasons(t); len(reasons) > 0 && reasons[0].level >= r {
		r, why = reasons[0].level, reasons[0].why
		if n := len(reasons) - 1; n > 0 {
			why += "; and " + Count(n, "more reason")
		}
	}
	return r, why
}

// opRisk is the operation's own risk and why, read with its sealed outcome
// when it has one (nil for proposals stored before outcomes were sealed).
func opRisk(a Args, pins Pinned, s *Sealed, t Tense) (Risk, string) {
	if s == nil {
		return a.risk(pins), a.why(pins)
	}
	switch a := a.(type) {
	case *RebaseArgs:
		if s.FastForward && s.Losses().None() {
			return RiskMedium, say(t, "only moves ", "only moved ", "would only have moved ") + a.Branch +
				" forward to " + a.Onto + ": " + a.Branch + " has no commits of its own to replay, so no history is rewritten"
		}
	case *BranchDeleteArgs:
		if len(s.Moves) > 0 && s.Losses().None() {
			return RiskMedium, branchDeleteWhy(s, t)
		}
	case *ResetArgs:
		// A hard reset that finds no uncommitted work and leaves no commit
		// behind moves a branch and a checkout (high), but loses nothing.
		if a.Mode == ResetHard && s.Effect == EffectLoses && s.Lost != nil && s.Losses().None() {
			return RiskHigh, say(t, "moves ", "moved ", "would have moved ") + "the checked-out branch to " + a.Target +
				" and " + say(t, "makes", "made", "would have made") + " the working tree match; there " + say(t, "is", "was", "was") + " no uncommitted work and no commit to lose"
		}
	case *PlanArgs:
		if len(s.Steps) == len(a.Steps) {
			r, why := RiskLow, ""
			for i, st := range a.Steps {
				if st.Args == nil {
					continue
				}
				if sr, sw := opRisk(st.Args, pins, &s.Steps[i], t); sr >= r {
					r, why = sr, sw
				}
			}
			return r, fmt.Sprintf("runs %d steps as one unit; the riskiest %s", len(a.Steps), why)
		}
	}
	return a.risk(pins), a.why(pins)
}

// branchDeleteWhy says which branches a sealed deletion removes and that
// nothing is lost: the seal deletes only branches whose commits are all in
// the checked-out branch or in their upstream, and keeps the others.
func branchDeleteWhy(s *Sealed, t Tense) string {
	var names []string
	for _, m := range s.Moves {
		n := strings.TrimPrefix(m.Ref, "refs/heads/")
		if m.Repo != "" {
			n += " in " + path.Base(m.Repo)
		}
		names = append(names, n)
	}
	what, them := "the branch "+names[0], "it"
	if len(names) > 1 {
		what, them = Count(len(names), "branch")+" ("+listNames(names, 5)+")", "them"
	}
	why := say(t, "deletes ", "deleted ", "would have deleted ") + what + "; every commit on " + them +
		" " + say(t, "is", "was", "was") + " in the checked-out branch or in an upstream, so nothing " +
		say(t, "is", "was", "would have been") + " lost"
	if n := len(s.Keeps); n > 0 {
		why += "; " + say(t, "keeps ", "kept ", "would have kept ") + Count(n, "other branch") + " that " +
			map[bool]string{true: "are", false: "is"}[n > 1] + " not safe to delete"
	}
	return why
}
