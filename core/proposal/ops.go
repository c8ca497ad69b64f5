package proposal

import (
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"
)

// Op names what a proposal asks for.
type Op string

//go:generate go run ../../build/opsgen proposal

// opDef is everything this package knows of one operation: its arguments
// type (in op_<operation>.go, whose methods say how they are validated,
// what they pin, what they write and name, their risk and why) and
// whether it can be a plan step. Each operation declares its Op and its
// opDef in its op_<operation>.go file, and `go generate` lists them in
// ops_gen.go. How an operation is sealed and executed is its step in
// core/apply/ops_<operation>.go; its tool is a row of the sidecar's tool
// table.
type opDef struct {
	op      Op
	newArgs func() Args
	// newInput is what an agent gives the operation's propose_<op> tool
	// (nil for a plan, whose tool takes steps).
	newInput func() Input
	planStep bool
	// phrase names the operation in a sentence ("claude-code proposes a
	// merge on shop"): notifications use it.
	phrase string
	// label names the operation on its own, as a card, a queue row and
	// the history list show it: "merge", "branch delete".
	label string
	// outcome is what a card must know of the operation to say its sealed
	// outcome; every operation declares it, all false when none applies.
	outcome *OutcomeFacts
}

// OutcomeFacts are what a card needs to know of an operation, apart from
// its arguments, to say its sealed outcome in words.
type OutcomeFacts struct {
	// DeletesBranches: the operation deletes branches, and its card says
	// that nothing is lost when it deletes only branches whose commits
	// are elsewhere.
	DeletesBranches bool `json:"deletesBranches"`
	// ReplaysCommits: the commits the outcome lists are replayed onto a
	// new base, and a fast-forward rewrites none (a rebase).
	ReplaysCommits bool `json:"replaysCommits"`
	// SendsCommits: the commits the outcome lists are the ones a remote
	// receives (a push).
	SendsCommits bool `json:"sendsCommits"`
	// WritesCheckoutWhenConfined: proposed from a confined session, the
	// operation also writes the person's checkout, and the files it
	// leaves there as they are (the outcome's keeps) belong with the ones
	// it writes (a commit).
	WritesCheckoutWhenConfined bool `json:"writesCheckoutWhenConfined"`
}

// Input is how an agent asks for an operation: the fields its
// propose_<op> tool takes besides the repository, the reason and an
// idempotency key (a plan's step takes the same), described to the model
// by jsonschema tags, and the arguments they make. An input may also have
// an Enums method naming the values its string fields take.
type Input interface {
	Args() Args
}

// NewInput is a new, empty input of operation o, or nil when o takes
// none (a plan) or is unknown.
func NewInput(o Op) Input {
	if d, ok := defOf(o); ok && d.newInput != nil {
		return d.newInput()
	}
	return nil
}

// enumStrings is a schema enum of a list of values.
func enumStrings[T ~string](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

// Phrase names the operation in a sentence: "a merge", "discarding
// changes".
func (o Op) Phrase() string {
	if d, ok := defOf(o); ok {
		return d.phrase
	}
	return string(o)
}

// Label names the operation on its own, as the UI shows it: "merge",
// "branch delete".
func (o Op) Label() string {
	if d, ok := defOf(o); ok {
		return d.label
	}
	return string(o)
}

// OutcomeFacts are what a card needs to know of the operation to say its
// sealed outcome (all false for an unknown operation).
func (o Op) OutcomeFacts() OutcomeFacts {
	if d, ok := defOf(o); ok && d.outcome != nil {
		return *d.outcome
	}
	return OutcomeFacts{}
}

func defOf(o Op) (opDef, bool) {
	for _, d := range opDefs {
		if d.op == o {
			return d, true
		}
	}
	return opDef{}, false
}

// Ops lists every operation.
func Ops() []Op {
	out := make([]Op, len(opDefs))
	for i, d := range opDefs {
		out[i] = d.op
	}
	return out
}

// Valid reports whether o is a known operation.
func (o Op) Valid() bool {
	_, ok := defOf(o)
	return ok
}

// PlanStepOps lists the operations that may be steps of a plan.
func PlanStepOps() []Op {
	var out []Op
	for _, d := range opDefs {
		if d.planStep {
			out = append(out, d.op)
		}
	}
	return out
}

// PlanStep reports whether o may be a step of a plan.
func (o Op) PlanStep() bool {
	d, ok := defOf(o)
	return ok && d.planStep
}

// Args are the operation-specific arguments of a proposal. The concrete
// types are the *XxxArgs structs of this package.
type Args interface {
	// Op is the operation these arguments belong to.
	Op() Op
	// Validate checks the arguments on their own.
	Validate() error
	// Pins lists the revisions the proposal must pin to SHAs in its own
	// repository (Pinned.Refs keys).
	Pins() []string
	// WrittenRefs lists the full ref names the operation creates, moves or
	// deletes, as far as the arguments say; policy checks them.
	WrittenRefs() []string
	// FilesTouched lists repository-relative paths the operation changes
	// and whether that list is complete.
	FilesTouched() ([]string, bool)
	// Describe says what the operation does in a few words from its
	// arguments ("commit 'Add line' on main"): restore points are
	// labelled "before" it.
	Describe() string
	// SubjectBranch is the branch (or branches) the operation is of, as a
	// person would say them ("fix → main", "old-1, old-2"), or "" when its
	// arguments name none or only the branch checked out (which the
	// reason says better): a queue row is called by it when no commit
	// message names the change.
	SubjectBranch() string

	risk(Pinned) Risk
	// why says in one line why the operation has the risk it has.
	why(Pinned) string
}

// repoPinner is implemented by args that pin refs in other repositories
// (Pinned.Repos); all other args must leave Pinned.Repos empty.
type repoPinner interface {
	checkRepoPins(Pinned) error
}

// newArgs returns a zero *XxxArgs for op.
func newArgs(op Op) (Args, error) {
	if d, ok := defOf(op); ok {
		return d.newArgs(), nil
	}
	return nil, invalid("op", "unknown operation %q", op)
}

// DecodeArgs decodes raw strictly (unknown fields refused) into the
// arguments type of op. It does not validate them.
func DecodeArgs(op Op, raw json.RawMessage) (Args, error) {
	a, err := newArgs(op)
	if err != nil {
		return nil, err
	}
	if len(raw) == 0 {
		return nil, invalid("args", "missing")
	}
	if err := decodeStrict(raw, a); err != nil {
		return nil, invalid("args", "%v", err)
	}
	return a, nil
}

func validMessage(field, m string, required bool) error {
	if required && strings.TrimSpace(m) == "" {
		return invalid(field, "is required")
	}
	if len(m) > MaxMessageBytes {
		return invalid(field, "longer than %d bytes", MaxMessageBytes)
	}
	if !utf8.ValidString(m) || strings.ContainsRune(m, 0) {
		return invalid(field, "is not valid text")
	}
	return nil
}

func validPaths(field string, paths []string, allowDot, required bool) error {
	if required && len(paths) == 0 {
		return invalid(field, "at least one path is required")
	}
	if len(paths) > MaxPaths {
		return invalid(field, "at most %d paths", MaxPaths)
	}
	seen := map[string]bool{}
	for _, p := range paths {
		if !validRelPath(p, allowDot) {
			return invalid(field, "%q is not a clean repository-relative path outside .git", p)
		}
		if seen[p] {
			return invalid(field, "%q is listed twice", p)
		}
		seen[p] = true
	}
	return nil
}

func validBranches(field string, bs []string) error {
	if len(bs) == 0 || len(bs) > MaxBranchesPerOp {
		return invalid(field, "1 to %d branches", MaxBranchesPerOp)
	}
	seen := map[string]bool{}
	for _, b := range bs {
		if !validBranchName(b) {
			return invalid(field, "%q is not a valid branch name", b)
		}
		if seen[b] {
			return invalid(field, "%q is listed twice", b)
		}
		seen[b] = true
	}
	return nil
}

func validOptionalBranch(b string) error {
	if b != "" && !validBranchName(b) {
		return invalid("branch", "is not a valid branch name")
	}
	return nil
}

func withBranch(pins []string, branch string) []string {
	if branch != "" {
		pins = append(pins, BranchRef(branch))
	}
	return pins
}

func appendUnique(dst []string, src ...string) []string {
	for _, s := range src {
		if !slices.Contains(dst, s) {
			dst = append(dst, s)
		}
	}
	return dst
}

// maxDescribedSubject bounds the part of a description quoted from an
// agent's text (a commit message's subject): a description is a line in
// a list, not the text.
const maxDescribedSubject = 60

func quoteSubject(s string) string {
	if utf8.RuneCountInString(s) > maxDescribedSubject {
		r := []rune(s)
		s = string(r[:maxDescribedSubject-1]) + "…"
	}
	return "'" + s + "'"
}
