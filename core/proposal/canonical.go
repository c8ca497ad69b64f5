package proposal

import "github.com/sluicehq/sluice/core/canonjson"

// errNonInteger is returned when a value carries a number that is not an
// integer: the canonical form admits integers only, so that every
// implementation prints a number the same way.
var errNonInteger = canonjson.ErrNonInteger

// canonical encodes v in the audit ledger's canonical JSON form (the
// encoder the ledger uses too), so that a proposal digest can be checked by
// anything that reads the ledger: object keys sorted by their UTF-8 bytes
// at every level, arrays in order, no insignificant whitespace, no HTML
// escaping, U+2028/U+2029 and non-ASCII written literally, integers only.
func canonical(v any) ([]byte, error) {
	return canonjson.Marshal(v)
}
