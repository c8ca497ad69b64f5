// Package audit owns the tamper-evident ledger (format v1): the hash
// chain, Ed25519 signatures, rotation into segments with signed
// checkpoints, torn-tail recovery, and the streaming verifier behind
// verify-audit. Its lines are canonical JSON (core/canonjson).
//
// The format is shared with the FluxGit sidecar's ledger (chain version 1,
// signature version 3), so either tool's verifier reads the other's logs.
// canonjson.Marshal defines the byte form that is hashed and signed.
//
// # Durability contract
//
// Appends are fail closed: a caller that needs a record of what it is about
// to do asks for the append first and does nothing if it fails. Append and
// AppendBatch return only after the line is written and fsynced; the file is
// created, rotated and pruned with directory fsyncs. When an append fails,
// the entry is not in the ledger.
//
// Any number of processes may append to one ledger. Each append takes an
// exclusive flock on <file>.lock, reads the chain head back from the file
// (another process may have appended or rotated since), repairs a torn last
// line left by a writer that died, appends, syncs and unlocks.
//
// # Files
//
//	<file>                                              active file
//	<file>.lock                                         cross-process lock
//	<file>.segment-<first:020>-<last:020>-<segmentId>   rotated segments
//	<file>.checkpoint-<nextSeq:020>-<uuid>.json         retention checkpoint
//
// All are 0600 in a 0700 directory. Symlinks, hard-linked files and
// directories open to group or others are refused (ErrSymlink, ErrHardLink,
// ErrPermissions). When more than MaxSegments segments exist the oldest is
// pruned, after a signed checkpoint that carries the chain across the gap
// has been written and synced.
//
// # What the chain proves, and what it does not
//
// Verify detects any edit, insertion, deletion, duplication or reordering of
// retained lines, and the removal of old segments without a matching signed
// checkpoint. It cannot detect the removal of the newest entries from the end
// of the chain (there is nothing after them to disagree), nor a wholesale
// rewrite of an unsigned ledger or checkpoint. Pre-chain ("legacy") lines at
// the very start of the oldest file are counted but authenticated by nothing;
// RequireSigned refuses them along with any unsigned entry.
package audit
