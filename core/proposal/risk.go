package proposal

import (
	"fmt"
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
// embedded repositories it adds, most severe first.
func (s *Sealed) allRiskReasons() []riskReason {
	out := s.riskReasons()
	for _, dir := range s.embeddedRepos() {
		out = append(out, riskReason{RiskHigh, "adds a git repository's directory, " + dir +
			" (a bare repository: its config can run programs when git is used in it)"})
	}
	slices.SortStableFunc(out, func(a, b riskReason) int { return int(b.level) - int(a.level) })
	return out
}
