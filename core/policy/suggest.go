package policy

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/proposal"
)

// Expiry choices for a rule made from a card.
const (
	ExpiryHour   = "hour"   // one hour from now
	ExpiryToday  = "today"  // the end of the local day
	ExpiryAlways = "always" // never
)

// ExpiryAt is when a rule made at now with choice ends; zero for always.
func ExpiryAt(choice string, now time.Time) (time.Time, error) {
	switch choice {
	case ExpiryHour:
		return now.Add(time.Hour), nil
	case ExpiryToday:
		y, m, d := now.Date()
		return time.Date(y, m, d+1, 0, 0, 0, 0, now.Location()), nil
	case ExpiryAlways, "":
		return time.Time{}, nil
	}
	return time.Time{}, fmt.Errorf("%w: expiry: %q is not hour, today or always", ErrInvalid, choice)
}

// Suggest drafts the rule that would approve proposals like pr: the same
// agent, trusted as the kind of identity it is (a confined session, an
// HTTP token, or only a name it declared), in the same repository (and
// the others it pins), the same operations, the branches it changes (a
// branch below a folder, such as agent/x, becomes the pattern agent/*),
// the folders of the files it touches, and its risk as the highest. The
// person sees and edits it before it is saved. A destructive proposal has
// no such rule.
func Suggest(pr proposal.Proposal) (Rule, error) {
	if pr.Destructive() {
		return Rule{}, fmt.Errorf("%w: %s proposals that can lose work always need a person", ErrDestructive, pr.Op)
	}
	if pr.Repo == "" {
		return Rule{}, fmt.Errorf("%w: the proposal names no repository, and a rule from a card is for the card's repository", ErrInvalid)
	}
	r := Rule{Name: pr.Agent + "-" + string(pr.Op), Agent: pr.Agent, Ops: []proposal.Op{}, Refs: []string{}, Paths: []string{},
		Repos: reposOf(pr), Identity: pr.Identity()}
	for _, op := range opsOf(pr) {
		if !slices.Contains(r.Ops, op) {
			r.Ops = append(r.Ops, op)
		}
	}
	if refs, known := writtenRefs(pr); known {
		for _, ref := range refs {
			pat := shortRef(ref)
			if i := strings.LastIndexByte(pat, '/'); i > 0 && strings.HasPrefix(ref, "refs/heads/") {
				pat = pat[:i] + "/*"
			}
			if !slices.Contains(r.Refs, pat) {
				r.Refs = append(r.Refs, pat)
			}
		}
	}
	if files, complete := pr.FilesTouched(); complete {
		for _, f := range files {
			p := path.Dir(f)
			if p == "." {
				p = f
			}
			if !slices.Contains(r.Paths, p) {
				r.Paths = append(r.Paths, p)
			}
		}
		slices.Sort(r.Paths)
		r.Paths = coverOnly(r.Paths)
	}
	r.MaxRisk = pr.Risk().String()
	return r, nil
}

// coverOnly drops prefixes that another prefix in the sorted list covers.
func coverOnly(sorted []string) []string {
	var out []string
	for _, p := range sorted {
		if len(out) > 0 && underAny(out[len(out)-1:], p) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// Check validates a rule on its own, as AddRule would, without a file:
// for the dialog that shows a rule before it is saved.
func (r Rule) Check() error {
	c := r
	c.Ops = slices.Clone(r.Ops)
	c.Paths = slices.Clone(r.Paths)
	if err := c.compile("rule", map[string]bool{}); err != nil {
		return err
	}
	if !validAgentKey(c.Agent) {
		return fmt.Errorf("%w: rule.agent: required, the agent's name", ErrInvalid)
	}
	return nil
}
