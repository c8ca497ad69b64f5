package connect

import (
	"fmt"
	"io"
	"strings"
)

// Describe writes what the plan would do, for a person: the server line,
// each file with its state and edits, what is pre-allowed, and the steps
// left to do. `sluice-sidecar config` and the app's Connect screen both
// show this text.
func (p *Plan) Describe(w io.Writer) {
	fmt.Fprintf(w, "Sluice for %s (%s scope)\n", p.Title, p.Scope)
	fmt.Fprintf(w, "Server: %s %s\n", p.Command, strings.Join(p.Args, " "))
	for _, f := range p.Files {
		state := "unchanged"
		switch {
		case f.Changed && !f.Exists:
			state = "will be created"
		case f.Changed:
			state = "will be updated (a backup is written first)"
		}
		if f.ReadOnly && f.Changed {
			state += "; it is read-only, so writing will be refused"
		}
		fmt.Fprintf(w, "\n%s (%s): %s\n", f.Path, f.Format, state)
		for _, e := range f.Edits {
			fmt.Fprintf(w, "  %s =\n", e.Key)
			for _, line := range strings.Split(e.Value, "\n") {
				fmt.Fprintf(w, "    %s\n", line)
			}
		}
	}
	fmt.Fprintf(w, "\nPre-allowed: %s\n", p.PreAllowNote)
	for _, t := range p.PreAllowed {
		fmt.Fprintf(w, "  %s\n", t)
	}
	if len(p.Steps) > 0 {
		fmt.Fprintln(w, "\nSteps:")
		for i, s := range p.Steps {
			fmt.Fprintf(w, "%d. %s\n", i+1, s)
		}
	}
}
