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
	if p.Confined != "" {
		fmt.Fprintf(w, "The confined way: start %s with `%s` in your repository's folder. It then works in a private copy\n", p.Title, p.Confined)
		fmt.Fprintln(w, "of the repository, sees none of your credentials or Sluice's files, reaches only its model, and its own")
		fmt.Fprintln(w, "shell can neither write your repository nor approve what it proposes. Nothing below is needed for that.")
		fmt.Fprintf(w, "\nWhat follows connects %s that you start yourself: it then runs as your account and could write to\nthe repository without asking.\n\n", p.Title)
	}
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
