package proposal

import (
	"strings"
	"testing"
)

func TestRiskWhy_EmbeddedBareRepository_High(t *testing.T) {
	added := func(paths ...string) []FileChange {
		var out []FileChange
		for _, p := range paths {
			out = append(out, FileChange{Status: FileAdded, Path: p, Mode: ModeFile, Size: 40})
		}
		return out
	}
	const why = " (a bare repository: its config can run programs when git is used in it)"
	for _, tc := range []struct {
		name  string
		files []FileChange
		steps []Sealed
		want  string // "" when the risk stays low
	}{
		{"HEAD and config", added("vendor/evil/HEAD", "vendor/evil/config", "README.md"), nil,
			"adds a git repository's directory, vendor/evil" + why},
		{"HEAD and objects", added("x.git/HEAD", "x.git/objects/info/packs"), nil,
			"adds a git repository's directory, x.git" + why},
		{"HEAD and refs", added("deep/er/repo/HEAD", "deep/er/repo/refs/heads/main"), nil,
			"adds a git repository's directory, deep/er/repo" + why},
		{"any case", added("r/head", "r/Config"), nil, "adds a git repository's directory, r" + why},
		{"at the top", added("HEAD", "config", "objects/ab/cdef"), nil,
			"adds a git repository's directory, the repository's top folder" + why},
		{"in a plan's step", nil, []Sealed{{Files: added("a/b")}, {Files: added("nested/HEAD", "nested/config")}},
			"adds a git repository's directory, nested" + why},
		{"HEAD alone", added("docs/HEAD", "docs/index.md"), nil, ""},
		{"config alone", added("app/config", "app/objects/x"), nil, ""},
		{"HEAD and config in different folders", added("a/HEAD", "b/config"), nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := sample(t, &CommitArgs{Message: "vendor", Paths: []string{"vendor"}, Branch: "agent/x"})
			p.Sealed = &Sealed{Effect: EffectLands, Files: tc.files, Steps: tc.steps}
			r, got := p.RiskWhy()
			if tc.want == "" {
				if r != RiskLow || strings.Contains(got, "git repository") {
					t.Errorf("risk %s %q, want low", r, got)
				}
				return
			}
			if r != RiskHigh || got != tc.want {
				t.Errorf("risk %s %q, want high %q", r, got, tc.want)
			}
		})
	}

	// A deletion of one, or one the operation throws away, adds nothing.
	p := sample(t, &CommitArgs{Message: "rm", Paths: []string{"vendor"}, Branch: "agent/x"})
	p.Sealed = &Sealed{Files: []FileChange{{Status: FileDeleted, Path: "v/HEAD"}, {Status: FileDeleted, Path: "v/config"}}}
	if r, why := p.RiskWhy(); r != RiskLow {
		t.Errorf("deleting one: %s %q", r, why)
	}
}
