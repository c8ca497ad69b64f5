// Package seal computes what a card shows: the sealed outcome of a
// proposal (proposal.Sealed), from the repository as it is when the
// proposal arrives, before anyone decides.
//
// A Work is one sealing: its temporary indexes and, for a state that is
// only compared, a scratch object directory. With it a sealing reads the
// working tree as a tree (WorktreeState: HEAD's tree with the named paths
// as they are on disk), writes the trees an operation would record
// (Index, AddPaths, WriteTree, NewTree), refuses paths a git filter would
// transform (RefuseFilters), and lists how two trees differ, the way the
// card's file list shows it (Changes: each file's status, modes, blobs,
// size and whether git treats it as binary; see facts.go). In a plan, it
// carries what earlier steps leave in the checkout (Worktree, Overlay).
//
// Sealing writes only git objects and temporary files; it never touches
// the person's index, working tree or refs, and runs no hook, filter or
// driver the repository configures. The executor (core/apply) computes the
// same states again with a Work before it writes, and refuses to run when
// they are not the sealed ones; it drives the sealing of each operation
// (Executor.Seal) and keeps the sealed objects.
package seal
