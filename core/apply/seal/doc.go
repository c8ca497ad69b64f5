// Package seal computes what a card shows: the sealed outcome of a
// proposal (proposal.Sealed), from the repository as it is when the
// proposal arrives, before anyone decides.
//
// Each operation says what its card shows in its own file,
// op_<operation>.go: a type `<operation>Seal struct{ a
// *proposal.<Operation>Args }` whose seal method computes the outcome (the
// tree a commit or patch records, a merge's result and the commits it
// brings, a rebase's replayed tree, what a reset, discard or forced push
// loses, the branches a deletion removes or keeps). go generate lists them
// in ops_gen.go (sealOf), and a test fails when an operation has none.
// Outcome seals a proposal: one operation, or a plan's steps each on the
// state the steps before it leave (seal.go).
//
// A Work is one sealing (work.go): its temporary indexes and, for a state
// that is only compared, a scratch object directory. With it a seal reads
// the working tree as a tree (WorktreeState: HEAD's tree with the named
// paths as they are on disk), writes the trees an operation would record,
// refuses paths a git filter would transform, and lists how two trees
// differ the way the card's file list shows it (Changes, facts.go); in a
// plan, it carries what earlier steps leave in the checkout. What
// a sealing reads through the executor (the pins as they are now, the
// main working tree's HEAD, a session's copy, the checkout a session's
// commit writes) comes through Inputs; a stacked commit's base through the
// context (WithBelow). reseal.go says which outcomes a re-sealing carries
// over to a moved base.
//
// Sealing writes only git objects and temporary files; it never touches
// the person's index, working tree or refs, and runs no hook, filter or
// driver the repository configures. The executor (core/apply) opens and
// locks the repositories and keeps the objects (Executor.Seal, Keep); it
// computes the same states again with this package before it writes
// (DiscardState, PatchState, ResetState, SafeToDelete, WorktreePlace),
// and refuses to run when they are not the sealed ones. This package does
// not import core/apply; both run git through core/apply/internal/gitrun.
package seal
