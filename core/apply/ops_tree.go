package apply

import (
	"strings"
)

// knownPaths keeps the paths (literal pathspecs) that name at least one
// of the entries.
func knownPaths(paths, entries []string) []string {
	var out []string
	for _, p := range paths {
		for _, e := range entries {
			if e != "" && (p == "." || e == p || strings.HasPrefix(e, p+"/")) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}
