package gitx

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
)

// Classify turns the error of a git run into the *errcode.Error that the
// read tools, the executor and the workspace all return: one mapping, so
// a held index.lock or a revision that does not resolve reads the same
// whichever profile ran git.
//
// An *ExitError is classified by what git wrote to stderr (the patterns
// below, first match wins); every classified failure carries an
// errcode.GitFailure with the subcommand, the exit code and stderr up to
// its profile's reported cap, so a caller can still read what git said.
// A failure that matches no pattern is git_failed. Errors that are
// already coded (a refused operand, output_limit, ErrTimeout) and a
// cancelled context pass through unchanged; nil stays nil.
func Classify(err error) error {
	var ee *ExitError
	if !errors.As(err, &ee) {
		return err
	}
	s := strings.TrimSpace(ee.Stderr)
	data := errcode.GitFailure{Command: ee.Command, ExitCode: ee.ExitCode, Stderr: clip(s, ee.reported())}
	code, msg := classifyStderr(ee, strings.ToLower(s))
	if msg == "" {
		msg = fmt.Sprintf("git %s failed (exit %d)", ee.Command, ee.ExitCode)
		if first := firstLine(s, 300); first != "" {
			msg += ": " + first
		}
	}
	return &errcode.Error{Code: code, Msg: msg, Data: data, Err: ee}
}

// failurePatterns map what git writes to stderr to a code, in the order
// they are tried. git runs in the C locale (baseEnv), so its messages are
// the English ones matched here.
var failurePatterns = []struct {
	code errcode.Code
	subs []string
}{
	{errcode.NotARepository, []string{"not a git repository"}},
	// Another git holds a lock file: the index's (index.lock), a ref's or
	// the configuration's. Waiting for it, or removing a stale one, is
	// what the caller can do.
	{errcode.RepoLocked, []string{".lock': file exists", "another git process seems to be running", "index.lock"}},
	// A ref moved between reading and writing it (a compare-and-swap
	// update lost), or the name is taken.
	{errcode.Conflict, []string{"but expected", "reference already exists", "already exists", "cannot lock ref"}},
	// A path that is not there, in the tree or on disk.
	{errcode.NotFound, []string{"did not match any file", "does not exist in '", "exists on disk, but not in", "no such path", "no such file or directory"}},
	// A revision that does not resolve.
	{errcode.InvalidArgument, []string{
		"unknown revision", "bad revision", "ambiguous argument", "needed a single revision",
		"invalid object name", "not a valid object name", "bad object", "not a valid commit name",
		"invalid reference", "not a commit", "does not have any commits yet", "no such ref",
	}},
	// The machine, not the request: retrying later can succeed.
	{errcode.Unavailable, []string{"cannot allocate memory", "out of memory", "no space left on device", "resource temporarily unavailable", "too many open files", "unable to fork", "disk quota exceeded"}},
}

// classifyStderr is the code of a failure and, where the code needs one,
// its message ("" for the generic "git X failed (exit N): first line").
func classifyStderr(ee *ExitError, low string) (errcode.Code, string) {
	if strings.Contains(low, "detected dubious ownership") {
		return errcode.GitFailed, "git refuses this repository because another user owns it (safe.directory); the person must decide to trust it"
	}
	for _, p := range failurePatterns {
		for _, sub := range p.subs {
			if !strings.Contains(low, sub) {
				continue
			}
			switch p.code {
			case errcode.NotARepository:
				return p.code, ErrNotARepository.Msg
			case errcode.InvalidArgument:
				return p.code, "git could not resolve a revision: " + firstLine(strings.TrimSpace(ee.Stderr), ee.reported())
			}
			return p.code, ""
		}
	}
	if ee.ExitCode < 0 {
		// Killed by a signal that Sluice did not send.
		return errcode.Internal, fmt.Sprintf("git %s was killed by a signal", ee.Command)
	}
	return errcode.GitFailed, ""
}

func (e *ExitError) reported() int {
	if n := profiles[e.Profile].caps.reported; n > 0 {
		return n
	}
	return 1 << 10
}
