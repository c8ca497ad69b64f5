package apply

import (
	"fmt"
	"sort"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
)

// Sentinels for errors.Is. They carry only a code.
var (
	ErrStaleBase          = &errcode.Error{Code: errcode.StaleBase}
	ErrDigestMismatch     = &errcode.Error{Code: errcode.DigestMismatch}
	ErrNotApproved        = &errcode.Error{Code: errcode.NotApproved}
	ErrMergeConflict      = &errcode.Error{Code: errcode.MergeConflict}
	ErrHookFailed         = &errcode.Error{Code: errcode.HookFailed}
	ErrDirtyWorktree      = &errcode.Error{Code: errcode.DirtyWorktree}
	ErrRestoreConflict    = &errcode.Error{Code: errcode.RestoreConflict}
	ErrRestorePointAbsent = &errcode.Error{Code: errcode.RestorePointNotFound}
)

// staleBase builds the stale_base error for refs whose current SHA is not
// the expected one. current maps ref → SHA now ("" when gone).
func staleBase(moved map[string]string, expected map[string]string) *errcode.Error {
	keys := make([]string, 0, len(moved))
	for k := range moved {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		now := moved[k]
		if now == "" {
			now = "gone"
		} else {
			now = short(now)
		}
		parts = append(parts, fmt.Sprintf("%s was %s, now %s", k, short(expected[k]), now))
	}
	return &errcode.Error{Code: errcode.StaleBase, Data: moved,
		Msg: "the repository moved since the proposal was made, so nothing was changed: " + strings.Join(parts, "; ")}
}

// short abbreviates a SHA for messages.
func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// clip bounds text put into messages and outcomes, cutting on a line
// boundary where it can and saying so.
func clip(s string, max int) string {
	s = strings.TrimSpace(s)
	if len(s) <= max {
		return s
	}
	cut := s[:max]
	if i := strings.LastIndexByte(cut, '\n'); i > max/2 {
		cut = cut[:i]
	}
	return cut + "\n… (truncated)"
}
