package gitx

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// TestBriefLog_LocalSameAsGit: the brief's recent commits read in process
// are, byte for byte, git log's: through merges (an octopus among them),
// commits of the same date, dates older than a parent's, messages with
// blank lines before the subject, a subject on several lines, trailing
// white space and a subject longer than the brief keeps; from loose
// objects and from a pack. In a SHA-256 repository git answers, the
// same way.
func TestBriefLog_LocalSameAsGit(t *testing.T) {
	noUserAttributes(t)
	for _, format := range []string{"sha1", "sha256"} {
		t.Run(format, func(t *testing.T) {
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			r := gitxtest.InitAt(t, dir, "--object-format="+format)
			r.WriteCommit("a.txt", "a\n", "root")
			tree := r.Git("rev-parse", "HEAD^{tree}")
			commit := func(date int64, tz, msg string, parents ...string) string {
				h := "tree " + tree
				for _, p := range parents {
					h += "\nparent " + p
				}
				date += 1_600_000_000
				h += fmt.Sprintf("\nauthor Ada Lovelace <ada@example.com> %d %s\ncommitter Grace Hopper <grace@example.com> %d %s", date-7, tz, date, tz)
				return rawCommit(t, r, h, msg)
			}
			root := commit(1000, "+0000", "feat: root\n")
			c2 := commit(2000, "+0100", "\n\n  fix: after blank lines  \n\nbody\n", root)
			c3 := commit(2000, "-0700", "a subject\non two lines\t\n\nand a body", root)
			m1 := commit(3000, "+0000", "Merge c3", c2, c3)
			c4 := commit(2500, "+0530", "chore: older than its parent\n", m1)
			side := commit(2600, "+0000", "side: "+strings.Repeat("é", 150)+"\n", c2)
			oct := commit(4000, "-0000", "octopus", c4, side, c3)
			tip := oct
			for i := range 60 {
				tip = commit(int64(5000+i/3), "+0200", fmt.Sprintf("feat(x): step %d\n\nwith a body\n", i), tip)
			}
			r.Git("update-ref", "refs/heads/main", tip)
			r.Git("branch", "side-branch", side)
			r.Git("tag", "-a", "-m", "v", "v1", c4)
			check := func(where string) {
				t.Helper()
				repo := openIn(t, newRunner(t), r.Dir)
				for _, n := range []int{1, 5, 50, 100} {
					want, err := repo.logCommits(ctx(t), logOpts{opts: []string{fmt.Sprintf("--max-count=%d", n)}, revs: []string{"HEAD"}})
					if err != nil {
						t.Fatal(err)
					}
					got, err := repo.briefLog(ctx(t), n)
					if err != nil {
						t.Fatal(err)
					}
					wj, _ := json.Marshal(want)
					gj, _ := json.Marshal(got)
					if !bytes.Equal(wj, gj) {
						t.Errorf("%s, %d commits:\n got %s\nwant %s", where, n, gj, wj)
					}
					_, _, lerr := repo.logLocal(n)
					if (lerr == nil) != (format == "sha1") {
						t.Errorf("%s, %d commits: read in process: %v", where, n, lerr)
					}
				}
			}
			check("loose")
			r.Git("repack", "-q", "-a", "-d")
			r.Git("prune-packed")
			check("packed")
		})
	}
}

// TestSharesPrefix_AsAScan: the search of a pack index for another object
// with the same leading bytes finds what a scan of every object finds.
func TestSharesPrefix_AsAScan(t *testing.T) {
	r := gitxtest.Basic(t, 40)
	r.Git("repack", "-q", "-a", "-d")
	objs := NewObjects(filepath.Join(r.Dir, ".git"))
	defer objs.Close()
	if err := objs.listPacks(); err != nil || len(objs.packs) != 1 {
		t.Fatalf("packs: %v %d", err, len(objs.packs))
	}
	p := objs.packs[0]
	if err := objs.loadIndex(p); err != nil {
		t.Fatal(err)
	}
	var all [][]byte
	for _, line := range strings.Fields(r.Git("cat-file", "--batch-all-objects", "--batch-check=%(objectname)")) {
		b, _ := hex.DecodeString(line)
		all = append(all, b)
	}
	shared := 0
	for _, raw := range all {
		for _, n := range []int{1, 2} {
			want := false
			for _, o := range all {
				if !bytes.Equal(o, raw) && bytes.HasPrefix(o, raw[:n]) {
					want = true
				}
			}
			if got := sharesPrefix(p.idx, raw, raw[:n]); got != want {
				t.Errorf("%x, %d bytes: shares %v, a scan says %v", raw, n, got, want)
			}
			if want {
				shared++
			}
		}
	}
	if shared == 0 {
		t.Fatal("no two objects share a first byte: the fixture does not test the search")
	}
}
