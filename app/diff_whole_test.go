package app

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// TestWholeDiff_OneGitCall_SameAsPaged: a sealed outcome's diff larger
// than one paged call (a file whose own diff is over the per-file bound,
// 600 more, a rename and a deletion) is read in one git process, and it is
// the diff pagedDiff collects in many: the same text, each file once, the
// large file cut with the same notice.
func TestWholeDiff_OneGitCall_SameAsPaged(t *testing.T) {
	root := t.TempDir()
	r := gitxtest.InitAt(t, filepath.Join(root, "repo"))
	r.Write("old/name.txt", strings.Repeat("a line that moves\n", 40))
	r.Write("gone.txt", "going\n")
	r.Commit("base")
	base := strings.TrimSpace(r.Git("rev-parse", "HEAD"))
	var big bytes.Buffer
	for i := 0; big.Len() < 3*gitx.MaxDiffBytes/2; i++ {
		fmt.Fprintf(&big, "line %d of a generated file\n", i)
	}
	r.Write("a-big.txt", big.String())
	for i := range 600 {
		r.Write(fmt.Sprintf("src/pkg%02d/file%03d.txt", i%30, i), strings.Repeat(fmt.Sprintf("a line of file %d\n", i), 60))
	}
	if err := os.MkdirAll(filepath.Join(r.Dir, "new"), 0o755); err != nil {
		t.Fatal(err)
	}
	r.Git("mv", "old/name.txt", "new/name.txt")
	r.Git("rm", "-q", "gone.txt")
	r.Git("add", "-A")
	r.Git("commit", "-q", "-m", "many")
	head := strings.TrimSpace(r.Git("rev-parse", "HEAD"))
	var all []string
	fields := strings.Split(strings.TrimRight(r.Git("diff", "-M", "--name-status", "-z", base, head), "\x00"), "\x00")
	for i := 0; i < len(fields); i++ {
		if strings.HasPrefix(fields[i], "R") {
			all = append(all, fields[i+2], fields[i+1])
			i += 2
			continue
		}
		all = append(all, fields[i+1])
		i++
	}
	g, err := gitx.Default()
	if err != nil {
		t.Fatal(err)
	}
	repo, err := g.Open(t.Context(), gitx.Roots{root}, r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	spec := gitx.DiffSpec{Base: base, Target: head}
	paged, err := pagedDiff(t.Context(), repo, spec, all)
	if err != nil {
		t.Fatal(err)
	}
	before := g.Started()
	whole, err := diffAtOnce(t.Context(), repo, spec, all)
	if err != nil {
		t.Fatal(err)
	}
	if n := g.Started() - before; n != 1 {
		t.Errorf("the whole diff took %d git processes, want 1", n)
	}
	if len(paged.text) <= gitx.MaxDiffBytes {
		t.Fatalf("the diff is %d bytes: too small to need several paged calls", len(paged.text))
	}
	if whole.text != paged.text {
		t.Errorf("the diff read at once (%d bytes, %d files) differs from the paged one (%d bytes, %d files)",
			len(whole.text), strings.Count(whole.text, "\ndiff --git ")+1, len(paged.text), strings.Count(paged.text, "\ndiff --git ")+1)
	}
	if !slices.Equal(whole.notices, paged.notices) || len(whole.notices) != 1 || whole.compared != paged.compared {
		t.Errorf("notices %q (compared %q), paged %q (compared %q)", whole.notices, whole.compared, paged.notices, paged.compared)
	}
	if n := strings.Count(whole.text, "diff --git "); n != 603 {
		t.Errorf("%d files in the diff, want 603", n)
	}
}

// TestCapFileDiffs_CutsEachLargeFileOnALine: only the parts over the
// bound are cut, each on a line boundary and said once.
func TestCapFileDiffs_CutsEachLargeFileOnALine(t *testing.T) {
	small := "diff --git a/s b/s\n+small\n"
	large := "diff --git a/l b/l\n" + strings.Repeat("+0123456789\n", 10)
	text, notices := capFileDiffs(small+large+small+large, 64)
	cut := large[:strings.LastIndexByte(large[:64], '\n')+1]
	want := small + cut + small + cut
	if text != want || len(notices) != 2 {
		t.Errorf("got %q with %q, want %q with two notices", text, notices, want)
	}
	if text, notices := capFileDiffs(small, 64); text != small || notices != nil {
		t.Errorf("a diff under the bound changed: %q %q", text, notices)
	}
}
