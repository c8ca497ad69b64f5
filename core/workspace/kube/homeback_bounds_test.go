//go:build linux

package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace"
)

// TestHomeBack_FIFOSwappedInIsKept: another session of the program swaps
// a FIFO it holds open for writing in at a path the agent changed, between
// the check of the HOME's file and its read. The apply ends (the FIFO is
// kept as another session's), never waiting on the FIFO.
func TestHomeBack_FIFOSwappedInIsKept(t *testing.T) {
	f := newHomeFixture(t, map[string]string{"x": "old\n", "y": "old\n"})
	writeFiles(t, f.pod, map[string]string{"x": "agent\n", "y": "agent\n"})
	archive := podTreeLocal(t, f.pod, f.base, false)
	fifo := filepath.Join(filepath.Dir(f.host), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Held open for writing: a read of it waits for data that never comes.
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	swapped := false
	hostStatHook = func(name string) {
		if name == "x" && !swapped {
			swapped = true
			if err := os.Rename(fifo, filepath.Join(f.host, "x")); err != nil {
				t.Error(err)
			}
		}
	}
	defer func() { hostStatHook = nil }()
	type res struct {
		applied, kept int
		err           error
	}
	done := make(chan res, 1)
	go func() {
		a, k, err := f.back(t, archive, defaultHomeLimits)
		done <- res{a, k, err}
	}()
	var r res
	select {
	case r = <-done:
	case <-time.After(time.Minute): // a backstop: the apply does not wait on anything
		t.Fatal("the apply is still reading the FIFO swapped in by another session")
	}
	if r.err != nil || !swapped {
		t.Fatalf("err %v, swapped %v", r.err, swapped)
	}
	if r.applied != 1 || r.kept != 1 || len(f.kept) != 1 || f.kept[0] != "x" {
		t.Fatalf("applied %d kept %d (%v), want y applied and x kept", r.applied, r.kept, f.kept)
	}
	if st, err := os.Lstat(filepath.Join(f.host, "x")); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the other session's FIFO is not kept: %v %v", st, err)
	}
	if got := readString(t, filepath.Join(f.host, "y")); got != "agent\n" {
		t.Fatalf("y = %q", got)
	}
}

// TestHomeBack_EndsWithItsContext: an apply whose context ended writes
// nothing more and says so.
func TestHomeBack_EndsWithItsContext(t *testing.T) {
	f := newHomeFixture(t, map[string]string{"x": "old\n"})
	writeFiles(t, f.pod, map[string]string{"x": "agent\n", "new": "n\n"})
	archive := podTreeLocal(t, f.pod, f.base, false)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := backHome(ctx, f.host, f.in, f.base, defaultHomeLimits,
		func(read func(io.Reader) error) error { return read(bytes.NewReader(archive)) },
		func(string, string) {})
	if !errcode.IsCode(err, errcode.Timeout) {
		t.Fatalf("err %v, want a timeout", err)
	}
	if got := readString(t, filepath.Join(f.host, "x")); got != "old\n" {
		t.Fatalf("x = %q", got)
	}
	mustAbsent(t, filepath.Join(f.host, "new"))
}

// TestHomeBack_RefusesAHOMEPastItsBounds: a HOME of more paths than an
// agent's HOME holds (homeEntries), or whose manifest passes
// homeManifestBytes, does not come back, and nothing is written.
func TestHomeBack_RefusesAHOMEPastItsBounds(t *testing.T) {
	many := []workspace.TreeRecord{{Path: "d", Type: 'd', Mode: 0o755}}
	for i := 0; len(many) <= homeEntries; i++ {
		many = append(many, workspace.TreeRecord{Path: fmt.Sprintf("d/f%06d", i), Type: 'f', Mode: 0o644})
	}
	long := []workspace.TreeRecord{{Path: "d", Type: 'd', Mode: 0o755}}
	pad := strings.Repeat("n", 240)
	for _, d := range []string{"d/" + pad, "d/" + pad + "/" + pad, "d/" + pad + "/" + pad + "/" + pad} {
		long = append(long, workspace.TreeRecord{Path: d, Type: 'd', Mode: 0o755})
	}
	for i := 0; i < homeManifestBytes/(4*200); i++ {
		long = append(long, workspace.TreeRecord{Path: fmt.Sprintf("d/%s/%s/%s/%s%06d", pad, pad, pad, pad, i), Type: 'f', Mode: 0o644})
	}
	for name, recs := range map[string][]workspace.TreeRecord{"entries": many, "manifest bytes": long} {
		f := newHomeFixture(t, map[string]string{"keep.txt": "k"})
		before := snapshot(t, filepath.Dir(f.host))
		_, _, err := f.back(t, craftHome(t, recs, nil, nil), defaultHomeLimits)
		if !errors.Is(err, workspace.ErrArchiveLimit) {
			t.Errorf("%s: err %v, want a limit", name, err)
		}
		if after := snapshot(t, filepath.Dir(f.host)); len(after) != len(before) {
			t.Errorf("%s: written", name)
		}
	}
}

// TestHomeBack_LauncherAppliedAppDoesNotApplyAgain: the launcher applied
// the HOME and died before removing the pod; the app that ends the
// session finds no record of what went in and applies nothing again, so
// another session's write since (back to what went in) stays.
func TestHomeBack_LauncherAppliedAppDoesNotApplyAgain(t *testing.T) {
	f := newHomeFixture(t, map[string]string{"config.json": "v1\n", "defaults.json": "d\n"})
	writeFiles(t, f.pod, map[string]string{"config.json": "agent\n"})
	if err := os.Remove(filepath.Join(f.pod, "defaults.json")); err != nil {
		t.Fatal(err)
	}
	archive := podTreeLocal(t, f.pod, f.base, false)
	copyHost := filepath.Join(t.TempDir(), "session", "copy")
	if err := os.MkdirAll(copyHost, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := saveHomeIn(copyHost, f.host, f.in, f.base); err != nil {
		t.Fatal(err)
	}
	// The launcher's end (endHome).
	if _, _, err := homeBackOnce(copyHost, func() (int, int, error) { return f.back(t, archive, defaultHomeLimits) }); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, filepath.Join(f.host, "config.json")); got != "agent\n" {
		t.Fatalf("the launcher's apply: config.json = %q", got)
	}
	// Another session, since.
	writeFiles(t, f.host, map[string]string{"config.json": "v1\n", "defaults.json": "d\n"})
	// The app's EndSession.
	r := &Runtime{log: slog.New(slog.DiscardHandler)}
	ran := false
	r.endHomeFrom(context.Background(), "pod", copyHost, func(_ []byte, read func(io.Reader) error) error {
		ran = true
		return read(bytes.NewReader(archive))
	})
	if ran {
		t.Error("the app read the HOME back a second time")
	}
	if got := readString(t, filepath.Join(f.host, "config.json")); got != "v1\n" {
		t.Errorf("another session's config.json overwritten: %q", got)
	}
	if got := readString(t, filepath.Join(f.host, "defaults.json")); got != "d\n" {
		t.Errorf("another session's defaults.json: %q", got)
	}
}

// TestHomeBack_ModeOnlyChange: a file the agent made executable without
// changing it comes back executable (no set-id bit) where the HOME still
// holds what went in; one the HOME changed meanwhile, or got of its own
// with another mode, is kept.
func TestHomeBack_ModeOnlyChange(t *testing.T) {
	f := newHomeFixture(t, map[string]string{"bin/tool": "#!/bin/sh\n", "bin/other": "#!/bin/sh\n"})
	for p, m := range map[string]os.FileMode{"bin/tool": 0o755 | os.ModeSetuid, "bin/other": 0o755} {
		if err := os.Chmod(filepath.Join(f.pod, p), m); err != nil {
			t.Fatal(err)
		}
	}
	writeFiles(t, f.pod, map[string]string{"bin/made": "#!/bin/sh\n"})
	if err := os.Chmod(filepath.Join(f.pod, "bin/made"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Another session, meanwhile.
	if err := os.Chmod(filepath.Join(f.host, "bin/other"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, f.host, map[string]string{"bin/made": "#!/bin/sh\n"})
	if err := os.Chmod(filepath.Join(f.host, "bin/made"), 0o644); err != nil {
		t.Fatal(err)
	}
	applied, kept, err := f.back(t, nil, defaultHomeLimits)
	if err != nil {
		t.Fatal(err)
	}
	mode := func(p string) os.FileMode {
		st, err := os.Lstat(filepath.Join(f.host, p))
		if err != nil {
			t.Fatal(err)
		}
		return st.Mode()
	}
	if m := mode("bin/tool"); m != 0o755 {
		t.Errorf("bin/tool: %v, want -rwxr-xr-x", m)
	}
	if m := mode("bin/other"); m != 0o600 {
		t.Errorf("bin/other: %v, the other session's 0600 is not kept", m)
	}
	if m := mode("bin/made"); m != 0o644 {
		t.Errorf("bin/made: %v, the other session's 0644 is not kept", m)
	}
	if applied != 1 || kept != 2 {
		t.Errorf("applied %d kept %d (%v), want 1 and 2", applied, kept, f.kept)
	}
}

// TestHomeBack_RemovesStaleStages: a staging directory a crash left beside
// the HOMEs goes at the next apply; one younger (another apply's) stays.
func TestHomeBack_RemovesStaleStages(t *testing.T) {
	f := newHomeFixture(t, map[string]string{"x": "old\n"})
	parent := filepath.Dir(f.host)
	stale, young := filepath.Join(parent, stagePrefix+"stale"), filepath.Join(parent, stagePrefix+"young")
	for _, d := range []string{stale, young} {
		if err := os.MkdirAll(filepath.Join(d, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * stageAge)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.back(t, nil, defaultHomeLimits); err != nil {
		t.Fatal(err)
	}
	mustAbsent(t, stale)
	if _, err := os.Stat(young); err != nil {
		t.Fatalf("another apply's staging directory went: %v", err)
	}
}

// TestHomeBack_DrainTailBounded: what follows an archive's end is read up
// to maxArchiveTail bytes; more is refused (the stream is then ended), and
// the stream's close after the end is not a refusal.
func TestHomeBack_DrainTailBounded(t *testing.T) {
	if err := drainTail(bytes.NewReader(make([]byte, maxArchiveTail))); err != nil {
		t.Fatalf("padding refused: %v", err)
	}
	pr, pw := io.Pipe()
	pw.CloseWithError(io.ErrUnexpectedEOF)
	if err := drainTail(pr); err != nil {
		t.Fatalf("the stream's close refused: %v", err)
	}
	if err := drainTail(bytes.NewReader(make([]byte, maxArchiveTail+1))); !errors.Is(err, workspace.ErrArchiveLimit) {
		t.Fatalf("err %v, want a limit", err)
	}
}
