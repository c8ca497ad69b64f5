package gitx

import (
	"reflect"
	"strings"
	"testing"
)

// The functions that read git's answers are tested here on git's own
// output formats, without starting git; the tools that call git and them
// together are tested on real repositories in inspect_test.go.

func TestParseBranchTips_LocalBranchesCurrentAndOriginHead(t *testing.T) {
	out := strings.Join([]string{
		"aaa\x00refs/heads/main\x00 \x00",
		"bbb\x00refs/heads/feature\x00*\x00",
		"bbb\x00refs/heads/feature-copy\x00 \x00",
		"aaa\x00refs/remotes/origin/HEAD\x00 \x00refs/remotes/origin/main",
		"",
	}, "\n")
	bt := parseBranchTips([]byte(out))
	if bt.current != "feature" || bt.originHead != "main" {
		t.Fatalf("current %q, origin HEAD %q", bt.current, bt.originHead)
	}
	if !reflect.DeepEqual(bt.tips["bbb"], []string{"feature", "feature-copy"}) || bt.local["main"] != "aaa" || len(bt.local) != 3 {
		t.Fatalf("tips %v, local %v", bt.tips, bt.local)
	}
}

func TestStackLayers_BottomUpWithCommitCounts(t *testing.T) {
	// rev-list --first-parent from the tip down to the merge base, newest
	// first: c5 (the tip) … c1; part-1 ends at c2, part-2 at c4.
	chain := []string{"c5", "c4", "c3", "c2", "c1"}
	bt := branchTips{tips: map[string][]string{"c2": {"part-1"}, "c4": {"part-2"}, "c1": {"main"}}, current: "top"}
	got := stackLayers(chain, bt, "main", "top", "c5")
	want := []StackBranch{
		{Name: "part-1", SHA: "c2", Commits: 2},
		{Name: "part-2", SHA: "c4", Commits: 2},
		{Name: "top", SHA: "c5", Commits: 1, Current: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("stackLayers = %+v, want %+v", got, want)
	}
}

func TestAboveAndForkedBranches_Filtered(t *testing.T) {
	local := map[string]string{"main": "m", "top": "t", "same-tip": "t", "next": "n"}
	if got := aboveBranches([]byte("main\nnext\nsame-tip\ntop\n"), local, "main", "top", "t"); !reflect.DeepEqual(got, []string{"next"}) {
		t.Fatalf("aboveBranches = %v", got)
	}
	var many []string
	for i := 0; i < 25; i++ {
		many = append(many, "b"+strings.Repeat("x", i))
	}
	if got := aboveBranches([]byte(strings.Join(many, "\n")), local, "main", "top", "t"); len(got) != 20 {
		t.Fatalf("aboveBranches kept %d of 25, want 20", len(got))
	}
	stack := []StackBranch{{Name: "part-1"}, {Name: "top"}}
	if got := forkedBranches([]byte("main\npart-1\nold-copy\ntop\n"), stack, "main"); !reflect.DeepEqual(got, []string{"old-copy"}) {
		t.Fatalf("forkedBranches = %v", got)
	}
}

func TestParseNameStatus_RenamesAndTruncation(t *testing.T) {
	out := []byte("M\x00a.go\x00R087\x00old.go\x00new.go\x00A\x00b.txt\x00D\x00c.go\x00")
	files, truncated := parseNameStatus(out, 10)
	want := []SemanticFile{
		{Status: rawStatus['M'], Path: "a.go"},
		{Status: rawStatus['R'], Path: "new.go", OrigPath: "old.go"},
		{Status: rawStatus['A'], Path: "b.txt"},
		{Status: rawStatus['D'], Path: "c.go"},
	}
	if truncated || !reflect.DeepEqual(files, want) {
		t.Fatalf("parseNameStatus = %+v (truncated %v), want %+v", files, truncated, want)
	}
	files, truncated = parseNameStatus(out, 2)
	if !truncated || !reflect.DeepEqual(files, want[:2]) {
		t.Fatalf("with maxFiles 2: %+v (truncated %v)", files, truncated)
	}
	if files, truncated := parseNameStatus(nil, 10); files == nil || len(files) != 0 || truncated {
		t.Fatalf("no changes: %#v, %v", files, truncated)
	}
}

func TestParseUnmerged_StagesByPathInOrder(t *testing.T) {
	out := []byte("100644 b1 1\tz.txt\x00100644 o1 2\tz.txt\x00100644 t1 3\tz.txt\x00" +
		"100755 o2 2\ta.sh\x00100644 x 0\tclean.txt\x00garbage\x00")
	byPath, order := parseUnmerged(out)
	if !reflect.DeepEqual(order, []string{"z.txt", "a.sh"}) {
		t.Fatalf("order = %v", order)
	}
	z, a := byPath["z.txt"], byPath["a.sh"]
	if z[1].Blob != "b1" || z[2].Blob != "o1" || z[3].Blob != "t1" || z[0] != nil {
		t.Fatalf("z.txt stages: %+v", z)
	}
	if a[1] != nil || a[2].Mode != "100755" || a[3] != nil {
		t.Fatalf("a.sh stages: %+v", a)
	}
}

func TestDecodeHistoryCursor_RefusesForeignOrMalformed(t *testing.T) {
	page := historyPage(make([]Commit, 3), historyCursor{Head: "abcd1234", Skip: 4, Filter: "f1"}, 2)
	if page.NextCursor == "" || len(page.Commits) != 2 {
		t.Fatalf("historyPage: %+v", page)
	}
	cur, err := decodeHistoryCursor(page.NextCursor, "f1")
	if err != nil || cur != (historyCursor{Head: "abcd1234", Skip: 6, Filter: "f1"}) {
		t.Fatalf("decodeHistoryCursor = %+v, %v", cur, err)
	}
	if _, err := decodeHistoryCursor(page.NextCursor, "f2"); err == nil || !strings.Contains(err.Error(), "different query") {
		t.Fatalf("a cursor of another query: %v", err)
	}
	if _, err := decodeHistoryCursor("not-a-cursor!", "f1"); err == nil || !strings.Contains(err.Error(), "not one this tool returned") {
		t.Fatalf("a malformed cursor: %v", err)
	}
	if last := historyPage(make([]Commit, 2), historyCursor{Head: "abcd1234"}, 2); last.NextCursor != "" {
		t.Fatalf("the last page has a next cursor: %+v", last)
	}
}
