package proposal

import (
	"fmt"
	"testing"
)

// TestPathSet_AgreesWithPathsOverlap: for every pair of a table of paths
// (files, directories, nested, siblings with a common prefix, "."), the
// set's answer is PathsOverlap's.
func TestPathSet_AgreesWithPathsOverlap(t *testing.T) {
	paths := []string{".", "a", "a/b", "a/b/c.txt", "a/bc", "a/b/cd/e", "ab", "x/y/z", "x", "y/a/b", "a/b/c.txt/d"}
	for _, set := range [][]string{nil, {"a/b"}, {"a/bc", "x/y/z"}, {"."}, {"ab", "y/a/b/c"}, paths} {
		s := NewPathSet(set)
		for _, a := range paths {
			want := false
			for _, b := range set {
				want = want || PathsOverlap(a, b)
			}
			if got := s.Overlaps(a); got != want {
				t.Errorf("set %q, path %q: Overlaps %v, PathsOverlap %v", set, a, got, want)
			}
		}
	}
}

func BenchmarkPathSet_20000Against20000(b *testing.B) {
	mine, theirs := make([]string, 20000), make([]string, 20000)
	for i := range mine {
		mine[i] = fmt.Sprintf("src/pkg%03d/sub%02d/file%05d.go", i%500, i%20, i)
		theirs[i] = fmt.Sprintf("src/pkg%03d/sub%02d/other%05d.go", i%500, i%20, i)
	}
	for b.Loop() {
		s := NewPathSet(theirs)
		for _, a := range mine {
			s.Overlaps(a)
		}
	}
}
