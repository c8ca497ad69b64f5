//go:build !linux

package apply

// gitsIn cannot tell here whether a git process works in dirs, so it
// says so: every lock counts as one a git may hold, none is ever taken
// for a leftover and removed through Sluice on such a system; the card
// still names them.
func gitsIn([]string) ([]gitProc, bool) { return nil, false }
