package proposal

import "slices"

// What an operation's arguments name beyond refs and files: other places
// on disk, other repositories' refs, the branch the checkout must be on.
// Each is a method of the arguments that have it, so that the submitter
// and the app ask the arguments instead of switching on the operation.

// PlaceKind says what a place on disk is to an operation.
type PlaceKind string

// Place kinds.
const (
	// PlaceRepository is the top level of another repository the
	// operation writes in.
	PlaceRepository PlaceKind = "repository"
	// PlaceNewWorktree is a directory the operation creates.
	PlaceNewWorktree PlaceKind = "new worktree"
)

// Place is an absolute path on disk, outside the proposal's repository,
// that arguments name. Path points into the arguments, so that the
// submitter can replace it by its canonical form.
type Place struct {
	Kind PlaceKind
	Path *string
}

type placer interface{ places() []Place }

// Places lists the places on disk that a's arguments name (a plan's
// steps name none).
func Places(a Args) []Place {
	if p, ok := a.(placer); ok {
		return p.places()
	}
	return nil
}

// OtherRepo is a repository other than the proposal's whose refs the
// proposal pins (Pinned.Repos) at submit.
type OtherRepo struct {
	// Path is the repository's absolute path as the arguments name it
	// (not yet canonical).
	Path string
	// Refs are the refs to pin there.
	Refs []string
	// Within is true for a repository inside the proposal's own (a
	// submodule), false for one beside it.
	Within bool
}

type otherRepoNamer interface{ otherRepos(repo string) []OtherRepo }

// OtherRepos lists the repositories other than repo whose refs a's
// arguments pin.
func OtherRepos(a Args, repo string) []OtherRepo {
	if o, ok := a.(otherRepoNamer); ok {
		return o.otherRepos(repo)
	}
	return nil
}

type checkouter interface {
	// checkedOut is the branch the arguments say is checked out ("" for
	// none said).
	checkedOut() string
	// writesCheckedOut is true when the operation moves whatever branch
	// is checked out, without naming it.
	writesCheckedOut() bool
}

// CheckedOutBranches lists the branches a's arguments (each step's, for
// a plan) say the working tree is on.
func CheckedOutBranches(a Args) []string {
	var out []string
	forEach(a, func(a Args) {
		if c, ok := a.(checkouter); ok {
			if b := c.checkedOut(); b != "" && !slices.Contains(out, b) {
				out = append(out, b)
			}
		}
	})
	return out
}

// WrittenRefsKnown reports whether a.WrittenRefs is the whole list of
// refs the operation writes: a reset or a commit that does not name its
// branch moves whatever is checked out, which cannot be told in advance.
func WrittenRefsKnown(a Args) bool {
	known := true
	forEach(a, func(a Args) {
		if c, ok := a.(checkouter); ok && c.writesCheckedOut() {
			known = false
		}
	})
	return known
}

type upstreamPinner interface{ upstreamOf() []string }

// UpstreamsToPin lists the branches whose upstream (when they have one)
// the submitter pins too: a rebase of a pushed branch rewrites history
// others may have, and its pinned upstream is how the card knows.
func UpstreamsToPin(a Args) []string {
	var out []string
	forEach(a, func(a Args) {
		if u, ok := a.(upstreamPinner); ok {
			out = append(out, u.upstreamOf()...)
		}
	})
	return out
}

type pinHinter interface{ pinHint(ref string) string }

// PinHint says, when the revision ref that a's arguments name cannot be
// resolved, what the agent should do about it ("" when there is nothing
// more to say than that it does not exist).
func PinHint(a Args, ref string) string {
	if h, ok := a.(pinHinter); ok {
		return h.pinHint(ref)
	}
	return ""
}

// forEach calls fn for a and, for a plan, for each of its steps instead.
func forEach(a Args, fn func(Args)) {
	if plan, ok := a.(*PlanArgs); ok {
		for _, s := range plan.Steps {
			if s.Args != nil {
				fn(s.Args)
			}
		}
		return
	}
	fn(a)
}
