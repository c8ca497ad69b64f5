package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/gitx"
)

// checkIdentity asks the person's git, as Sluice runs it for the commits
// a person approves (gitx.ProfilePerson), for the author and committer
// identities: git var resolves them exactly as git commit does, from
// user.name and user.email (or what git may guess, unless
// user.useConfigOnly forbids it). It runs outside any repository, so a
// repository's own user.* settings are not seen; an identity set only
// there still works for that repository, and its cards say so. Only
// commits need it, so a missing one is a warning, as the cards block
// exactly the proposals that commit.
func checkIdentity(ctx context.Context) Result {
	r := Result{Name: "git identity"}
	run, err := gitx.NewRunner(gitx.RunnerOptions{Timeout: 5 * time.Second})
	if err != nil {
		r.Status, r.Detail = Warn, "not checked: "+err.Error()
		return r
	}
	dir, err := os.MkdirTemp("", "sluice-doctor-")
	if err != nil {
		r.Status, r.Detail = Warn, "not checked: "+err.Error()
		return r
	}
	defer os.RemoveAll(dir)
	var idents []string
	for _, v := range []string{"GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT"} {
		out, err := run.Run(ctx, gitx.Call{Profile: gitx.ProfilePerson, Dir: dir, Args: []string{"var", v},
			Env: []string{"GIT_CEILING_DIRECTORIES=" + dir}})
		var ee *gitx.ExitError
		switch {
		case errors.As(err, &ee):
			r.Status, r.Detail = Warn, "git has no identity for your commits: "+lastLine(ee.Stderr)
			r.Hint = `git config --global user.name "Your Name" && git config --global user.email you@example.com; until then, cards that commit in your name cannot be approved`
			return r
		case err != nil:
			r.Status, r.Detail = Warn, "not checked: "+err.Error()
			return r
		}
		idents = append(idents, identity(string(out.Stdout)))
	}
	r.Status, r.Detail = OK, idents[0]
	if idents[1] != idents[0] {
		r.Detail += " (committer " + idents[1] + ")"
	}
	return r
}

// identity is "Name <email>" from git var's "Name <email> time zone".
func identity(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '>'); i >= 0 {
		return s[:i+1]
	}
	return s
}

// lastLine is the last line of git's message, without "fatal: ".
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimPrefix(s, "fatal: ")
}

// checkRoots checks every allowed root: it exists, is a directory, and
// can be read (Sluice lists the repositories in it). No root at all is a
// warning: agents can then reach no repository.
func checkRoots(roots []string) []Result {
	if len(roots) == 0 {
		return []Result{{Name: "allowed roots", Status: Warn, Detail: "none: agents can reach no repository",
			Hint: "sluice roots add DIR (or Settings in the app)"}}
	}
	out := make([]Result, 0, len(roots))
	for _, root := range roots {
		r := Result{Name: "allowed root"}
		if err := readableDir(root); err != nil {
			r.Status, r.Detail, r.Hint = Fail, err.Error(), "make it a readable directory again, or sluice roots remove "+root
		} else {
			r.Status, r.Detail = OK, root
		}
		out = append(out, r)
	}
	return out
}

// readableDir says what keeps dir from being a directory Sluice can read.
func readableDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s does not exist", dir)
	case err != nil:
		return fmt.Errorf("%s cannot be read: %v", dir, err)
	case !st.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("%s cannot be read: %v", dir, err)
	}
	defer f.Close()
	if _, err := f.Readdirnames(1); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s cannot be read: %v", dir, err)
	}
	return nil
}
