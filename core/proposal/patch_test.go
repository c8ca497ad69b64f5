package proposal

import (
	"strings"
	"testing"
)

func TestPatchFiles(t *testing.T) {
	cases := []struct {
		name, patch, want string
	}{
		{"git diff", samplePatch, "src/main.go"},
		{"new file", "diff --git a/n.txt b/n.txt\nnew file mode 100644\n--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+x\n", "n.txt"},
		{"rename", "diff --git a/old b/new\nsimilarity index 100%\nrename from old\nrename to new\n", "new,old"},
		{"binary", "diff --git a/img.png b/img.png\nindex 1..2 100644\nGIT binary patch\nliteral 1\nIcmZo\n\n", "img.png"},
		{"space in name", "diff --git a/a b.txt b/a b.txt\nold mode 100644\nnew mode 100755\n", "a b.txt"},
		{"quoted", "--- \"a/t\\303\\251st\"\n+++ \"b/t\\303\\251st\"\n@@ -1 +1 @@\n-a\n+b\n", "tést"},
		{"plain diff -u with dates", "--- a/x.c\t2020-01-01 00:00:00\n+++ b/x.c\t2020-01-02 00:00:00\n@@ -1 +1 @@\n-a\n+b\n", "x.c"},
		{"removed line looks like header", "--- a/q.sql\n+++ b/q.sql\n@@ -1,2 +1,1 @@\n--- a/../../etc/passwd\n keep\n", "q.sql"},
		{"rename with changes", "diff --git a/old.txt b/new.txt\nsimilarity index 90%\nrename from old.txt\nrename to new.txt\n--- a/old.txt\n+++ b/new.txt\n@@ -1 +1 @@\n-a\n+b\n", "new.txt,old.txt"},
		{"rename with spaces", "diff --git a/my old.txt b/my new.txt\nsimilarity index 100%\nrename from my old.txt\nrename to my new.txt\n", "my new.txt,my old.txt"},
		{"copy", "diff --git a/a.txt b/c.txt\nsimilarity index 100%\ncopy from a.txt\ncopy to c.txt\n", "a.txt,c.txt"},
		{"deleted file", "diff --git a/d.txt b/d.txt\ndeleted file mode 100644\n--- a/d.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n", "d.txt"},
		{"plain new file", "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+x\n", "n.txt"},
		{"two files", samplePatch + "--- a/b\n+++ b/b\n@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+y\n", "b,src/main.go"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := patchFiles(c.patch)
			if err != nil {
				t.Fatalf("patchFiles: %v", err)
			}
			if strings.Join(got, ",") != c.want {
				t.Fatalf("patchFiles = %q, want %s", got, c.want)
			}
		})
	}
}

func TestPatchFiles_Refuses(t *testing.T) {
	for name, p := range map[string]string{
		"no header":     "just text\n",
		"no prefix":     "--- x\n+++ x\n",
		"escape":        "diff --git a/../x b/../x\nnew file mode 100644\n",
		"absolute":      "--- a//etc/passwd\n+++ b//etc/passwd\n@@ -1 +1 @@\n-a\n+b\n",
		"git dir":       "--- a/.git/config\n+++ b/.git/config\n@@ -1 +1 @@\n-a\n+b\n",
		"bad hunk":      "--- a/x\n+++ b/x\n@@ nonsense @@\n",
		"unterminated":  "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n",
		"bad git paths": "diff --git a/x b/y z\nold mode 100644\n",
	} {
		t.Run(name, func(t *testing.T) {
			if got, err := patchFiles(p); err == nil {
				t.Fatalf("patchFiles accepted: %q", got)
			}
		})
	}
}

// Each file of a patch must mean one thing: every line that names its old
// or new path names the same one, and none names a path the .git rule
// refuses. The refusal names the file.
func TestPatchFiles_RefusesDisagreeingHeaders(t *testing.T) {
	hunk := "@@ -1 +1 @@\n-a\n+b\n"
	for _, c := range []struct{ name, patch, want string }{
		{"header README, lines .git/config", "diff --git a/README.md b/README.md\n--- a/.git/config\n+++ b/.git/config\n" + hunk, ".git/config"},
		{"header .git/config, lines README", "diff --git a/.git/config b/.git/config\n--- a/README.md\n+++ b/README.md\n" + hunk, ".git/config"},
		{"header and lines name two ordinary files", "diff --git a/a.txt b/a.txt\n--- a/b.txt\n+++ b/b.txt\n" + hunk, `"a.txt"`},
		{"--- and +++ disagree", "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/c.txt\n" + hunk, `"c.txt"`},
		{"plain --- and +++ disagree", "--- a/a.txt\n+++ b/c.txt\n" + hunk, `"c.txt"`},
		{"rename to disagrees with header", "diff --git a/old b/new\nrename from old\nrename to other\n", "diff --git a/old b/new"},
		{"rename into .git", "diff --git a/x b/.git/hooks/pre-commit\nrename from x\nrename to .git/hooks/pre-commit\n", ".git/hooks/pre-commit"},
		{"copy from .git", "diff --git a/.git/config b/c.txt\ncopy from .git/config\ncopy to c.txt\n", ".git/config"},
		{"header names a rename the lines do not", "diff --git a/x b/x\nrename from x\nrename to y\n", `"y"`},
		{"second file disagrees", "--- a/a.txt\n+++ b/a.txt\n" + hunk + "diff --git a/README.md b/README.md\n--- a/.git/HEAD\n+++ b/.git/HEAD\n" + hunk, "line 6"},
		{"rename outside a git file", "--- a/a.txt\n+++ b/a.txt\nrename from a.txt\nrename to .git/config\n", "rename"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := patchFiles(c.patch)
			if err == nil {
				t.Fatalf("patchFiles accepted: %q", got)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not name %s", err, c.want)
			}
			a := &PatchArgs{Patch: c.patch, Target: PatchIndex}
			if err := a.Validate(); err == nil {
				t.Errorf("a patch proposal with it validates")
			}
		})
	}
}
