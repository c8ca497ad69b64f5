package proposal

// BranchArgs creates the branch Name at StartPoint.
type BranchArgs struct {
	Name       string `json:"name"`
	StartPoint string `json:"startPoint"`
	// Checkout switches the main working tree to the new branch, which
	// needs a clean working tree.
	Checkout bool `json:"checkout,omitempty"`
}

func (*BranchArgs) Op() Op { return OpBranch }

// OpBranch names the operation.
const OpBranch Op = "branch"

var branchDef = opDef{op: OpBranch, newArgs: func() Args { return &BranchArgs{} }, newInput: func() Input { return &BranchInput{} }, planStep: false, phrase: "a branch", label: "branch", outcome: &OutcomeFacts{}}

// BranchInput is what an agent gives propose_branch besides the repository,
// the reason and an idempotency key; the jsonschema tags describe each
// field to the model.
type BranchInput struct {
	Name       string `json:"name" jsonschema:"branch name"`
	StartPoint string `json:"startPoint,omitempty" jsonschema:"default HEAD"`
	Checkout   bool   `json:"checkout,omitempty" jsonschema:"also switch to it (no uncommitted changes)"`
}

// Args are the branch's arguments; it starts at HEAD unless startPoint
// says otherwise.
func (in *BranchInput) Args() Args {
	start := in.StartPoint
	if start == "" {
		start = "HEAD"
	}
	return &BranchArgs{Name: in.Name, StartPoint: start, Checkout: in.Checkout}
}

func (a *BranchArgs) Validate() error {
	if !validBranchName(a.Name) {
		return invalid("name", "is not a valid branch name")
	}
	if !validRevision(a.StartPoint) {
		return invalid("startPoint", "is not a valid revision")
	}
	return nil
}

func (a *BranchArgs) Pins() []string                 { return []string{a.StartPoint} }
func (a *BranchArgs) WrittenRefs() []string          { return []string{BranchRef(a.Name)} }
func (a *BranchArgs) FilesTouched() ([]string, bool) { return nil, true }
func (a *BranchArgs) risk(Pinned) Risk {
	if a.Checkout {
		return RiskMedium
	}
	return RiskLow
}
func (a *BranchArgs) why(Pinned) string {
	if a.Checkout {
		return "creates " + a.Name + " and switches the working tree to it"
	}
	return "creates the branch " + a.Name
}

// Describe says what the branch proposal does, in a few words.
func (a *BranchArgs) Describe() string { return "branch " + a.Name }

// SubjectBranch is the branch created.
func (a *BranchArgs) SubjectBranch() string { return a.Name }
