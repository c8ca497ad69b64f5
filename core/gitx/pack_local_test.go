package gitx

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// TestReadPacked_AsCatFile: every object of a pack, whole or as a chain of
// deltas against an offset or an id, reads as git cat-file gives it.
func TestReadPacked_AsCatFile(t *testing.T) {
	for _, deltas := range []string{"offset", "id"} {
		t.Run(deltas, func(t *testing.T) {
			r := gitxtest.Basic(t, 60)
			for i := range 20 {
				r.WriteCommit("grow.txt", strings.Repeat("a line that stays\n", 50+i)+"tail\n", "grow")
			}
			args := []string{"repack", "-q", "-a", "-d", "-f", "--depth=20", "--window=50"}
			if deltas == "id" {
				// pack-objects writes deltas against an id when offsets are
				// not allowed (repack -n leaves the old packs; a fresh one is
				// made by pack-objects below).
				args = []string{"-c", "repack.useDeltaBaseOffset=false", "repack", "-q", "-a", "-d", "-f", "--depth=20", "--window=50"}
			}
			r.Git(args...)
			r.Git("prune-packed")
			gitDir := filepath.Join(r.Dir, ".git")
			objs := NewObjects(gitDir)
			defer objs.Close()
			// The kind of delta the pack holds, read from each entry's type.
			if err := objs.listPacks(); err != nil || len(objs.packs) != 1 {
				t.Fatalf("packs: %v", err)
			}
			p := objs.packs[0]
			if err := objs.loadIndex(p); err != nil {
				t.Fatal(err)
			}
			pack, err := os.ReadFile(filepath.Join(gitDir, "objects", "pack", p.name+".pack"))
			if err != nil {
				t.Fatal(err)
			}
			kinds := map[plumbing.ObjectType]int{}
			iter, _ := p.idx.Entries()
			for e, err := iter.Next(); err == nil; e, err = iter.Next() {
				kinds[plumbing.ObjectType((pack[e.Offset]>>4)&7)]++
			}
			want := map[string]plumbing.ObjectType{"offset": plumbing.OFSDeltaObject, "id": plumbing.REFDeltaObject}[deltas]
			if kinds[want] < 10 {
				t.Fatalf("the pack holds %v: not the deltas this test reads", kinds)
			}
			lines := strings.Split(r.Git("cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype) %(deltabase)"), "\n")
			var deltified int
			for _, l := range lines {
				f := strings.Fields(l)
				typ, _ := plumbing.ParseObjectType(f[1])
				if !strings.HasPrefix(f[2], "0000") {
					deltified++
				}
				got, err := objs.Full(plumbing.NewHash(f[0]), typ, 64<<20)
				if err != nil {
					t.Fatalf("%s %s: %v", f[0], f[1], err)
				}
				c := exec.Command("git", "cat-file", f[1], f[0])
				c.Dir = r.Dir
				want, err := c.Output()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s %s: read %d bytes unlike cat-file's %d", f[0], f[1], len(got), len(want))
				}
			}
			if deltified < 10 {
				t.Fatalf("%d objects are deltas: the pack does not test them", deltified)
			}
		})
	}
}
