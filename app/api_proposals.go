package app

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/core/apply"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// Card is everything a person needs to decide on one proposal.
type Card struct {
	ID string      `json:"id"`
	Op proposal.Op `json:"op"`
	// Label names the operation as the card, its queue row and History
	// show it ("merge", "branch delete"); StepLabels name a plan's steps,
	// in order.
	Label      string   `json:"label"`
	StepLabels []string `json:"stepLabels,omitempty"`
	// SubjectBranch is the branch (or branches) the operation is of, as a
	// person says them ("fix → main"), or "": a queue row is called by it
	// when no commit message names the change.
	SubjectBranch string `json:"subjectBranch"`
	// OpFacts are what the card needs to know of the operation to say
	// its sealed outcome.
	OpFacts  proposal.OutcomeFacts `json:"opFacts"`
	Agent    string                `json:"agent"`
	Repo     string                `json:"repo"`
	RepoName string                `json:"repoName"`
	Reason   string                `json:"reason"`
	State    proposal.State        `json:"state"`
	Risk     proposal.Risk         `json:"risk"`
	// RiskWhy says in one line why the risk is what it is.
	RiskWhy     string `json:"riskWhy"`
	Destructive bool   `json:"destructive"`
	// ConfirmWord is what the person must type to approve a destructive
	// proposal: a name they would say (the branch it rewrites, or the
	// repository's name), never an internal one. ConfirmWhat says what
	// the word is ("the name of the branch this rewrites").
	ConfirmWord string `json:"confirmWord,omitempty"`
	ConfirmWhat string `json:"confirmWhat,omitempty"`
	// Tense is when the card's sentences are said: "future" before the
	// proposal runs, "past" once it landed, "unrealized" when it ended
	// without changing anything. RiskWhy and LossWhy are said in it.
	Tense proposal.Tense `json:"tense"`
	// Losses counts, by kind, what approving loses (nil without a sealed
	// outcome); LossWhy says it in one sentence ("" when nothing is lost).
	Losses      *proposal.Losses `json:"losses,omitempty"`
	LossWhy     string           `json:"lossWhy,omitempty"`
	Digest      string           `json:"digest"`
	ShortDigest string           `json:"shortDigest"`
	Pinned      proposal.Pinned  `json:"pinned"`
	Args        proposal.Args    `json:"args"`
	// Sealed is the exact outcome approving produces (nil only for
	// proposals stored before outcomes were sealed).
	Sealed *proposal.Sealed `json:"sealed,omitempty"`
	// Evidence is Sluice's record of the workspace runs behind a
	// workspace's proposal.
	Evidence   *CardEvidence       `json:"evidence,omitempty"`
	Files      []string            `json:"files"`
	FilesKnown bool                `json:"filesKnown"`
	Collisions []journal.Collision `json:"collisions"`
	CreatedAt  proposal.Timestamp  `json:"createdAt"`
	ExpiresAt  proposal.Timestamp  `json:"expiresAt"`
	Decision   *journal.Decision   `json:"decision,omitempty"`
	// ApprovedByRule names the auto-approve rule that approved it, if one did.
	ApprovedByRule string           `json:"approvedByRule,omitempty"`
	Outcome        *journal.Outcome `json:"outcome,omitempty"`
	// Retryable: the proposal failed without changing anything, so the
	// person may run it again (Retry) once its cause is fixed.
	Retryable bool           `json:"retryable"`
	History   []journal.Step `json:"history"`
	// Invisible lists the fields that held invisible characters (bidi
	// controls, zero-width characters); reason, repo and files above are
	// already shown with them escaped.
	Invisible []InvisibleText `json:"invisible"`
	// InvisibleContent lists the lines of the diff's files and of the
	// workspace runs' output that held invisible characters, each with its
	// file and line (the diff and the evidence show them as ⟨U+XXXX⟩);
	// InvisibleContentMore counts those beyond the list.
	InvisibleContent     []InvisibleLine `json:"invisibleContent"`
	InvisibleContentMore int             `json:"invisibleContentMore"`
	// Locks are git's lock files in the repositories of an interrupted
	// execution (needs_reconciliation only); those its own killed git
	// left can be removed from the card (RemoveLocks).
	Locks []apply.Lock `json:"locks,omitempty"`
	// Origin is set when the agent ran in a confined session Sluice
	// started; Confinement says, in one line, how the agent ran either
	// way ("confined session (bubblewrap; network: …)", or that it runs as
	// the person's account and could write without asking).
	Origin      *proposal.Origin `json:"origin,omitempty"`
	Confinement string           `json:"confinement"`
	// Stale is set, for a pending proposal, when the app's watch of its
	// repository found that something it depends on moved in a way it
	// cannot be re-sealed over; StaleWhy says what, in one line. (The
	// open card checks again itself: this is what the list shows.)
	Stale    bool   `json:"stale"`
	StaleWhy string `json:"staleWhy,omitempty"`
	// Resealed is the latest re-sealing of a pending proposal on a moved
	// base: the same changes, on a new tree, under a new digest.
	Resealed *journal.Reseal `json:"resealed,omitempty"`
	// Below is the pending proposal this one is stacked on: it lands
	// after that one, and is re-sealed on it when it does.
	Below string `json:"below,omitempty"`
}

// ErrConfirmation is returned when a destructive proposal is approved
// without typing its confirmation word.
var ErrConfirmation = &errcode.Error{Code: errcode.ConfirmationRequired, Msg: "this change can lose work: type the confirmation word to approve it"}

// ErrStaleCard is returned when the person approved a digest other than
// the proposal's (the card they saw is not the proposal that would run).
var ErrStaleCard = &errcode.Error{Code: errcode.DigestMismatch, Msg: "the proposal is not the one shown on the card; reload and decide again"}

// cardFor builds the card of a record.
func (a *App) cardFor(rec journal.Record, withCollisions bool) Card {
	p := rec.Proposal
	files, known := p.FilesTouched()
	tense := proposal.TenseOf(rec.State)
	risk, why := p.RiskWhyIn(tense)
	c := Card{
		ID: p.ID, Op: p.Op, Label: p.Op.Label(), OpFacts: p.Op.OutcomeFacts(), Agent: p.Agent, Repo: p.Repo, RepoName: filepath.Base(p.Repo),
		Reason: p.Reason, State: rec.State, Risk: risk, RiskWhy: why, Destructive: p.Destructive(), Sealed: p.Sealed,
		Digest: p.Digest, ShortDigest: proposal.ShortDigest(p.Digest), Pinned: p.Pinned, Args: p.Args,
		Files: files, FilesKnown: known, CreatedAt: p.CreatedAt, ExpiresAt: p.ExpiresAt,
		Decision: rec.Decision, Outcome: rec.Outcome, History: rec.History,
		Collisions: []journal.Collision{}, ApprovedByRule: autoApprovedBy(rec.Decision),
		Origin: p.Origin, Confinement: p.Origin.Describe(), Tense: tense,
		Retryable: journal.Retryable(rec),
	}
	if p.Args != nil {
		c.SubjectBranch, c.StepLabels = p.Args.SubjectBranch(), proposal.StepLabels(p.Args)
	}
	if p.Sealed != nil {
		l := p.Sealed.Losses()
		c.Losses, c.LossWhy = &l, l.Sentence(tense)
	}
	if c.Files == nil {
		c.Files = []string{}
	}
	c.Evidence = a.evidenceFor(p)
	if c.Destructive {
		c.ConfirmWord, c.ConfirmWhat = confirmation(p)
	}
	if rec.State == proposal.Pending {
		c.StaleWhy = a.pending.staleWhy(p.ID)
		c.Stale = c.StaleWhy != ""
		if p.Sealed != nil {
			c.Below = p.Sealed.Below
		}
	}
	c.Resealed = rec.LastReseal()
	if withCollisions && rec.State == proposal.Pending {
		if cs, err := a.journal.Collisions(p); err == nil && cs != nil {
			c.Collisions = cs
		}
	}
	flagInvisible(&c)
	a.flagContent(&c, p, withCollisions)
	return c
}

// confirmWord is what a person types to approve a destructive proposal
// (see confirmation).
func confirmWord(p proposal.Proposal) string {
	w, _ := confirmation(p)
	return w
}

// confirmation is what a person types to approve a destructive proposal,
// and what it is, in words: a name they would say aloud, never an
// internal one like an operation's. It is the branch the proposal
// rewrites when it writes exactly one (the branch it names, or for a
// reset or discard of the checkout, the branch checked out when it was
// sealed), else the repository's folder name.
func confirmation(p proposal.Proposal) (word, what string) {
	var branches []string
	for _, ref := range p.Args.WrittenRefs() {
		if b, ok := strings.CutPrefix(ref, "refs/heads/"); ok && !slices.Contains(branches, b) {
			branches = append(branches, b)
		}
	}
	if len(branches) == 1 {
		return branches[0], "the name of the branch this rewrites"
	}
	if len(branches) == 0 && p.Sealed != nil {
		if b, ok := strings.CutPrefix(p.Sealed.Head, "refs/heads/"); ok {
			if p.Op.ChangesCheckoutOnly() {
				return b, "the name of the branch whose checkout this changes"
			}
			return b, "the name of the branch this rewrites"
		}
	}
	return filepath.Base(p.Repo), "the name of the repository"
}

// pendingPage is how many cards the pending list holds at most: the
// oldest, read in order from the journal's index of pending records, each
// card's collisions from its index of pending paths, so that the list
// costs the same with 10 or 100,000 waiting. The status's count says how
// many wait; a card past the page shows once older ones are decided.
const pendingPage = 500

// Pending lists the proposals waiting for a decision, oldest first (the
// order they should be read in), at most pendingPage of them.
func (api *API) Pending() ([]Card, error) {
	recs, err := api.app.journal.List(journal.Filter{States: []proposal.State{proposal.Pending}, Oldest: true, Limit: pendingPage})
	if err != nil {
		return nil, err
	}
	cards := make([]Card, 0, len(recs))
	for _, r := range recs {
		cards = append(cards, api.app.cardFor(r, true))
	}
	return cards, nil
}

// HistoryQuery filters the history screen.
type HistoryQuery struct {
	Agent string `json:"agent"`
	Repo  string `json:"repo"`
	State string `json:"state"`
	Text  string `json:"text"`
	Limit int    `json:"limit"`
	// After is the id of the last row already shown: the answer is the
	// page that follows it.
	After string `json:"after"`
}

// History lists proposals in every state, newest first, a page at a time.
// The filters, the text search included, are applied to every record in
// the journal before the page is cut, so an old proposal is found however
// many came after it.
func (api *API) History(q HistoryQuery) ([]Card, error) {
	f := journal.Filter{Agent: q.Agent, Repo: q.Repo, Limit: q.Limit, After: q.After}
	if q.State != "" {
		st := proposal.State(q.State)
		if !st.Valid() {
			return nil, &errcode.Error{Code: errcode.InvalidArgument, Msg: fmt.Sprintf("unknown state %q", q.State)}
		}
		f.States = []proposal.State{st}
	}
	if q.After != "" && !proposal.ValidID(q.After) {
		return nil, &errcode.Error{Code: errcode.InvalidArgument, Msg: "invalid proposal id to continue after"}
	}
	if f.Limit <= 0 || f.Limit > 500 {
		f.Limit = 500
	}
	if text := strings.ToLower(strings.TrimSpace(q.Text)); text != "" {
		f.Match = func(r journal.Record) bool { return historyText(r, text) }
		if outsideEscapes(text) {
			f.Text = text
		}
	}
	recs, err := api.app.journal.List(f)
	if err != nil {
		return nil, journal.Coded(err)
	}
	cards := make([]Card, 0, len(recs))
	for _, r := range recs {
		cards = append(cards, api.app.cardFor(r, false))
	}
	return cards, nil
}

// outsideEscapes reports whether text, found in the words a row shows,
// is found in them as stored (journal.SearchText), so that the journal
// need read only the records whose stored words hold it. The row writes
// each hidden character as ⟨U+XXXX⟩ (flagInvisible); a text without ⟨ or
// ⟩ that lies within such an escape is made of u, + and hex digits alone,
// so a text with any other character lies outside every escape, where the
// row's words are the stored ones.
func outsideEscapes(text string) bool {
	if strings.ContainsAny(text, "⟨⟩") {
		return false
	}
	return strings.ContainsFunc(text, func(r rune) bool { return !strings.ContainsRune("u+0123456789abcdef", r) })
}

// historyText reports whether the words a history row shows (its reason,
// agent, repository name, operation and id) contain text, which is lower
// case. The reason and the name are matched as the row shows them, with
// hidden characters escaped (see flagInvisible); the record is not built
// into a card, so a search over many records stays cheap.
func historyText(r journal.Record, text string) bool {
	p := r.Proposal
	shown := func(s string) string {
		if v, ok := visible(s); ok {
			return v
		}
		return s
	}
	return strings.Contains(strings.ToLower(shown(p.Reason)+" "+p.Agent+" "+shown(filepath.Base(p.Repo))+" "+string(p.Op)+" "+p.ID), text)
}

// Proposal returns one card.
func (api *API) Proposal(id string) (Card, error) {
	rec, err := api.app.record(id)
	if err != nil {
		return Card{}, err
	}
	c := api.app.cardFor(rec, true)
	// Only the proposal's own page reads the repository for git's locks:
	// History lists many cards and does not show them.
	c.Locks = api.app.locksFor(rec)
	return c, nil
}

// record reads the record of id, with the errors the UI knows: an id that
// is not one is invalid_argument, a missing record proposal_not_found.
func (a *App) record(id string) (journal.Record, error) {
	if !proposal.ValidID(id) {
		return journal.Record{}, &errcode.Error{Code: errcode.InvalidArgument, Msg: "invalid proposal id"}
	}
	rec, err := a.journal.Get(id)
	return rec, journal.Coded(err)
}

// Decision is what the person sends from a card.
type Decision struct {
	ID string `json:"id"`
	// Digest is the digest shown on the card: the decision is bound to it.
	Digest string `json:"digest"`
	Note   string `json:"note"`
	// Confirm is the typed confirmation word for destructive proposals.
	Confirm string `json:"confirm"`
	// Comments are notes on the proposal's files and lines that a
	// rejection sends to the agent; other decisions refuse them.
	Comments []journal.Comment `json:"comments,omitempty"`
}

// errCommentsNotRejecting refuses comments on any decision but a rejection.
var errCommentsNotRejecting = &errcode.Error{Code: errcode.InvalidArgument, Msg: "notes on files and lines go with a rejection only"}

// Approve records the person's approval of exactly the digest they saw;
// the executor then runs it (see bridgeJournal).
func (api *API) Approve(d Decision) (Card, error) {
	a := api.app
	rec, err := a.decisionTarget(d)
	if err != nil {
		return Card{}, err
	}
	// The word must be typed exactly: a space before or after it is not
	// the word the card asked for.
	if rec.Proposal.Destructive() && d.Confirm != confirmWord(rec.Proposal) {
		return Card{}, ErrConfirmation
	}
	if err := a.approvable(rec); err != nil {
		return Card{}, err
	}
	rec, err = a.journal.Approve(d.ID, d.Digest, "owner:"+api.kind, d.Note)
	if err != nil {
		return Card{}, decisionError(err)
	}
	return a.cardFor(rec, false), nil
}

// Reject records the person's rejection.
func (api *API) Reject(d Decision) (Card, error) {
	a := api.app
	common := d
	common.Comments = nil
	if _, err := a.decisionTarget(common); err != nil {
		return Card{}, err
	}
	// The journal checks the comments against the proposal's files and
	// records nothing when one does not fit.
	rec, err := a.journal.RejectWith(d.ID, "owner:"+api.kind, d.Note, d.Comments)
	if err != nil {
		return Card{}, decisionError(err)
	}
	return a.cardFor(rec, false), nil
}

// Preflight checks whether a pending proposal's card is still what would
// land: its pinned refs and the working-tree content its outcome was
// sealed from. It changes nothing.
func (api *API) Preflight(id string) (apply.Preflight, error) {
	a := api.app
	rec, err := a.record(id)
	if err != nil {
		return apply.Preflight{}, err
	}
	if a.executor == nil {
		return apply.Preflight{}, errNoRoots
	}
	pf, err := a.preflight(rec.Proposal)
	if err != nil {
		return apply.Preflight{}, err
	}
	return *pf, nil
}

// SendBack rejects a stale pending proposal so that the agent's
// proposal_wait gets stale_base with what moved, and can propose again.
func (api *API) SendBack(d Decision) (Card, error) {
	a := api.app
	rec, err := a.decisionTarget(d)
	if err != nil {
		return Card{}, err
	}
	if a.executor == nil {
		return Card{}, errNoRoots
	}
	pf, err := a.preflight(rec.Proposal)
	if err != nil {
		return Card{}, err
	}
	if !pf.Stale {
		return Card{}, &errcode.Error{Code: errcode.InvalidArgument, Msg: "the proposal is not stale: nothing it depends on changed; approve or reject it"}
	}
	rec, err = a.journal.SendBack(d.ID, "owner:"+api.kind, d.Note, pf.Describe())
	if err != nil {
		return Card{}, decisionError(err)
	}
	return a.cardFor(rec, false), nil
}

func (a *App) decisionTarget(d Decision) (journal.Record, error) {
	if len(d.Note) > 2000 {
		return journal.Record{}, &errcode.Error{Code: errcode.InvalidArgument, Msg: "the note is longer than 2000 bytes"}
	}
	if len(d.Comments) > 0 {
		return journal.Record{}, errCommentsNotRejecting
	}
	rec, err := a.record(d.ID)
	if err != nil {
		return rec, err
	}
	if rec.State != proposal.Pending {
		return rec, &errcode.Error{Code: errcode.ProposalTerminal, Msg: fmt.Sprintf("this proposal is %s, not pending", rec.State)}
	}
	if d.Digest != rec.Proposal.Digest {
		return rec, ErrStaleCard
	}
	return rec, nil
}

// decisionError is a decision's failure as the person sees it: the
// journal's sentinels coded as journal.Coded codes them for every
// boundary (a digest that no longer matches is the stale card's code).
func decisionError(err error) error {
	return journal.Coded(err)
}
