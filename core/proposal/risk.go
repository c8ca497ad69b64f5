package proposal

import "fmt"

// Risk is how much an approval can cost if it is wrong. The order matters:
// a plan is as risky as its riskiest step.
type Risk int

// Risk levels, least to most.
const (
	// RiskLow adds without moving anything that exists: a new branch, a
	// worktree, a commit on top of a branch.
	RiskLow Risk = iota + 1
	// RiskMedium changes content in a recoverable way: merge, patch,
	// ordinary push, recording a submodule pointer.
	RiskMedium
	// RiskHigh moves refs or checkouts in ways that need care to undo.
	RiskHigh
	// RiskDestructive can lose work: hard reset, discard, force-with-lease
	// push, rebase of a pushed branch, branch deletion. Cards ask for a
	// strong confirmation and policies never auto-approve it.
	RiskDestructive
)

var riskNames = map[Risk]string{RiskLow: "low", RiskMedium: "medium", RiskHigh: "high", RiskDestructive: "destructive"}

// String is the risk's name.
func (r Risk) String() string {
	if n, ok := riskNames[r]; ok {
		return n
	}
	return fmt.Sprintf("risk(%d)", int(r))
}

// ParseRisk is the inverse of String.
func ParseRisk(s string) (Risk, error) {
	for r, n := range riskNames {
		if n == s {
			return r, nil
		}
	}
	return 0, fmt.Errorf("%w: risk: %q is not one of low, medium, high, destructive", ErrInvalid, s)
}

// MarshalText writes the name.
func (r Risk) MarshalText() ([]byte, error) {
	if _, ok := riskNames[r]; !ok {
		return nil, fmt.Errorf("invalid risk %d", int(r))
	}
	return []byte(r.String()), nil
}

// UnmarshalText reads the name.
func (r *Risk) UnmarshalText(b []byte) error {
	v, err := ParseRisk(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}
