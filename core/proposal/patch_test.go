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
