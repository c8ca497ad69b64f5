package seal

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestChanges_ByRuleSameAsGit: the file list with git's binary rule
// applied by the seal (the diff attributes, a NUL in the first bytes) is
// the one git's own line counts give, for every kind of file git tells
// apart: text, a NUL in the first 8,000 bytes and after them, -diff and
// the binary macro, a diff driver that says binary and one that says
// text, a symlink, a gitlink, a rename, a deletion and a mode change.
func TestChanges_ByRuleSameAsGit(t *testing.T) {
	f := newRepo(t)
	f.git("config", "diff.bin.binary", "true")
	f.git("config", "diff.txt.binary", "false")
	f.repo.Write(".gitattributes", "*.nodiff -diff\n*.mac binary\n*.drv diff=bin\n*.txtdrv diff=txt\n")
	f.repo.Write("gone.bin", "gone\x00for good, and unlike any other file here\n")
	f.repo.Write("moved.txt", strings.Repeat("a line that stays the same\n", 40))
	f.repo.Write("mode.sh", "echo hi\n")
	f.repo.Write("was-binary.dat", "was\x00binary\n")
	f.repo.Commit("before")
	before := f.git("rev-parse", "HEAD^{tree}")

	f.repo.Write("src/a.txt", "a1\na2 changed\na3\n")
	f.repo.Write("nul-early.dat", "text\x00more\n")
	f.repo.Write("nul-late.dat", strings.Repeat("x", 8000)+"\x00after\n")
	f.repo.Write("plain.nodiff", "only text\n")
	f.repo.Write("plain.mac", "only text\n")
	f.repo.Write("plain.drv", "only text\n")
	f.repo.Write("nul.txtdrv", "a\x00b\n")
	f.repo.Write("was-binary.dat", "text now\n")
	// Read alone, streamed (over 1 MiB): one binary, one text.
	f.repo.Write("big.bin", "\x00"+strings.Repeat("b", 2<<20))
	f.repo.Write("big.txt", strings.Repeat("a text line\n", 200000))
	// Nine files of 1 MiB: more than one batch.
	for i := range 9 {
		f.repo.Write(fmt.Sprintf("mb/%d.txt", i), strings.Repeat(fmt.Sprintf("%d", i), 1<<20))
	}
	f.repo.Write("mb/late-nul.txt", strings.Repeat("z", 1<<20-1)+"\x00")
	// Enough files to be read by two processes at once; every seventh
	// binary.
	for i := range 240 {
		body := fmt.Sprintf("file %d\n", i)
		if i%7 == 0 {
			body = fmt.Sprintf("file\x00%d\n", i)
		}
		f.repo.Write(fmt.Sprintf("many/%03d.txt", i), body)
	}
	if err := os.Symlink("src/a.txt", filepath.Join(f.repo.Dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(f.repo.Dir, "gone.bin")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(f.repo.Dir, "moved.txt"), filepath.Join(f.repo.Dir, "moved-to.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(f.repo.Dir, "mode.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.git("add", "-A")
	f.git("update-index", "--add", "--cacheinfo", "160000,"+f.git("rev-parse", "HEAD")+",sub")
	after := f.git("write-tree")

	s := New(f.gitrun(t), t.TempDir())
	byRule, err := s.changesByRule(testCtx(t), before, after)
	if err != nil {
		t.Fatal(err)
	}
	byGit, err := s.changesByNumstat(testCtx(t), before, after)
	if err != nil {
		t.Fatal(err)
	}
	// Binary content replaced by text: git's numstat says binary (its old
	// side), the list says what the new content is.
	for i := range byRule {
		if byRule[i].Path == "was-binary.dat" {
			if byRule[i].Binary || !byGit[i].Binary {
				t.Fatalf("was-binary.dat: by rule binary=%v, numstat binary=%v", byRule[i].Binary, byGit[i].Binary)
			}
			byGit[i].Binary = false
		}
	}
	if !reflect.DeepEqual(byRule, byGit) {
		t.Fatalf("by rule:\n%+v\ngit's numstat:\n%+v", byRule, byGit)
	}
	binary := map[string]bool{}
	for _, c := range byGit {
		binary[c.Path] = c.Binary
	}
	want := map[string]bool{"src/a.txt": false, "nul-early.dat": true, "nul-late.dat": false, "plain.nodiff": true, "plain.mac": true,
		"plain.drv": true, "nul.txtdrv": false, "link": false, "gone.bin": true, "moved-to.txt": false, "mode.sh": false, "sub": false,
		"big.bin": true, "big.txt": false, "mb/late-nul.txt": false, "was-binary.dat": false}
	for i := range 9 {
		want[fmt.Sprintf("mb/%d.txt", i)] = false
	}
	for i := range 240 {
		want[fmt.Sprintf("many/%03d.txt", i)] = i%7 == 0
	}
	if !reflect.DeepEqual(binary, want) {
		t.Fatalf("binary by path %v, want %v (the fixture does not cover what it says)", binary, want)
	}
}
