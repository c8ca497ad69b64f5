package app

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/proposal"
)

// frontendOpSwitches lists where the UI's sources (tests, fixtures and
// the generated client aside) decide something by an operation's name:
// a comparison of an op, a switch on one, a table indexed by one, words
// made of one, a case or the keys of a table that are operations' names. What the UI says of
// an operation comes from the app's payloads (label, subjectBranch,
// opFacts), computed from the operation's definition in core/proposal.
func frontendOpSwitches(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	for _, o := range proposal.Ops() {
		names = append(names, regexp.QuoteMeta(string(o)))
	}
	alt := strings.Join(names, "|")
	opExpr := `[\w.?]*\bop\b`
	rules := []struct {
		what string
		re   *regexp.Regexp
	}{
		{"compares an op", regexp.MustCompile(`\bop\s*(===|!==|==|!=)|(===|!==|==|!=)\s*` + opExpr)},
		{"switches on an op", regexp.MustCompile(`switch\s*\(\s*` + opExpr + `\s*\)`)},
		{"indexes a table by an op", regexp.MustCompile(`\[\s*` + opExpr + `\s*\]|\.(includes|has|get)\(\s*` + opExpr + `\s*\)`)},
		{"makes words of an op's name", regexp.MustCompile(opExpr + `\s*\.\s*(replace|replaceAll|split|slice|toUpperCase|toLowerCase)\(`)},
		{"has a case of an op's name", regexp.MustCompile(`case\s*["'` + "`" + `](` + alt + `)["'` + "`" + `]\s*:`)},
	}
	keyRe := regexp.MustCompile(`(?:^\s*|[{,]\s*)["']?(` + alt + `)["']?\s*:`)
	var found []string
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !(strings.HasSuffix(name, ".ts") || strings.HasSuffix(name, ".tsx")) ||
			strings.Contains(name, ".test.") || name == "testing.ts" || name == "testSetup.ts" || name == "api.gen.ts" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		for i, l := range lines {
			code := l
			if j := strings.Index(code, "//"); j >= 0 && !strings.Contains(code[:j], `"`) {
				code = code[:j]
			}
			for _, r := range rules {
				if r.re.MatchString(code) {
					found = append(found, fmt.Sprintf("%s:%d %s: %s", name, i+1, r.what, strings.TrimSpace(l)))
				}
			}
			// A table keyed by operations' names: two of them as keys
			// within a few lines.
			keys := map[string]bool{}
			for _, w := range lines[i:min(i+6, len(lines))] {
				for _, m := range keyRe.FindAllStringSubmatch(w, -1) {
					keys[m[1]] = true
				}
			}
			if len(keys) >= 2 && keyRe.MatchString(code) {
				found = append(found, fmt.Sprintf("%s:%d keys a table by operations' names: %s", name, i+1, strings.TrimSpace(l)))
			}
		}
	}
	return found
}

// The UI decides nothing by an operation's name: adding an operation
// needs its files in core/proposal and core/apply and a tool-table row,
// never a change of the frontend.
func TestFrontend_NoOperationNameSwitches(t *testing.T) {
	dir := filepath.Join("..", "frontend", "src")
	if d := os.Getenv("SLUICE_FRONTEND_SRC"); d != "" {
		dir = d
	}
	if found := frontendOpSwitches(t, dir); len(found) > 0 {
		t.Fatalf("the frontend decides %d time(s) by an operation's name; say it from the card's label, subjectBranch or opFacts (computed from the operation's definition in core/proposal) instead:\n%s",
			len(found), strings.Join(found, "\n"))
	}
}
