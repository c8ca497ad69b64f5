package workspace

import (
	"bytes"
	"context"
	"path"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/gitpath"
	"github.com/sluicehq/sluice/core/proposal"
)

// Handoff checks look at base..head of a workspace for changes that would
// act on the person's machine once the commits land in their repository,
// rather than being code they review: attributes that select filter
// drivers, submodule URLs, hook locations, newly executable files and
// symlinks that leave the tree. "refuse" findings stop a seal; "flag"
// findings are shown to the human on the card.

// Finding severities.
const (
	SeverityRefuse = "refuse"
	SeverityFlag   = "flag"
)

// Finding is one handoff check result.
type Finding struct {
	Severity string `json:"severity"`
	Rule     string `json:"rule"`
	Path     string `json:"path"`
	Detail   string `json:"detail"`
}

// Refused reports whether any finding refuses the handoff.
func Refused(fs []Finding) bool {
	for _, f := range fs {
		if f.Severity == SeverityRefuse {
			return true
		}
	}
	return false
}

const maxCheckedBlob = 1 << 20

// HandoffChecks checks base..head in the workspace repository. Empty base
// and head mean the workspace's base and head.
func (m *Manager) HandoffChecks(ctx context.Context, id, base, head string) ([]Finding, error) {
	if err := checkRevision(base); err != nil {
		return nil, err
	}
	if err := checkRevision(head); err != nil {
		return nil, err
	}
	w, unlock, err := m.open(id, false, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return m.handoffLocked(ctx, w, base, head)
}

type rawChange struct {
	oldMode, newMode string
	oldSHA, newSHA   string
	status           string
	path             string
}

func (m *Manager) handoffLocked(ctx context.Context, w *Workspace, base, head string) ([]Finding, error) {
	var err error
	if base == "" {
		if base, err = m.baseTree(ctx, w); err != nil {
			return nil, err
		}
	}
	if head == "" {
		head = w.Head
	}
	if head == "" {
		return []Finding{}, nil
	}
	gitDir := m.gitDir(w.ID)
	out, err := m.git.run(ctx, gitCall{gitDir: gitDir, args: []string{"diff-tree", "-r", "-z", "--no-renames", "--raw", "--no-commit-id"}, revs: []string{base, head}})
	if err != nil {
		return nil, err
	}
	changes := parseRawDiff(out)
	c := &checker{m: m, ctx: ctx, gitDir: gitDir, out: []Finding{}}
	if w.Source.Kind == SourceRepo {
		c.repo = w.Source.Path
	}
	for _, ch := range changes {
		c.check(ch)
	}
	if c.err != nil {
		return nil, c.err
	}
	return c.out, nil
}

func parseRawDiff(b []byte) []rawChange {
	var out []rawChange
	parts := bytes.Split(bytes.TrimSuffix(b, []byte{0}), []byte{0})
	for i := 0; i+1 < len(parts); i += 2 {
		meta := strings.Fields(strings.TrimPrefix(string(parts[i]), ":"))
		if len(meta) < 5 {
			continue
		}
		out = append(out, rawChange{oldMode: meta[0], newMode: meta[1], oldSHA: meta[2], newSHA: meta[3], status: meta[4][:1], path: string(parts[i+1])})
	}
	return out
}

type checker struct {
	m      *Manager
	ctx    context.Context
	gitDir string
	// repo is the person's repository the commits are handed off into.
	repo string
	out  []Finding
	err  error
}

func (c *checker) add(sev, rule, p, detail string) {
	c.out = append(c.out, Finding{Severity: sev, Rule: rule, Path: p, Detail: detail})
}

func (c *checker) blob(sha string) string {
	if c.err != nil || strings.Trim(sha, "0") == "" {
		return ""
	}
	b, err := c.m.git.run(c.ctx, gitCall{gitDir: c.gitDir, limit: maxCheckedBlob, truncated: new(bool), args: []string{"cat-file"},
		// The type goes after --end-of-options too: cat-file takes no
		// option after its first operand.
		revs: []string{"blob", sha}})
	if err != nil {
		c.err = err
		return ""
	}
	return string(b)
}

var (
	hooksDirs      = []string{".githooks", ".husky"}
	gitConfigNames = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(^|/)(\.?gitconfig|[^/]*\.gitconfig|\.lfsconfig|\.config/git/config)$`)
	})
	hooksPathRe  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?im)^\s*hookspath\s*=`) })
	execConfigRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?im)^\s*(fsmonitor|sshcommand|pager|editor|askpass|helper|textconv|command|driver|clean|smudge|process|program|path)\s*=`)
	})
	attrDriverRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?:^|\s)(filter|diff|merge)=(\S+)`) })
	// Drivers git implements itself: naming them runs nothing.
	builtinDrivers = map[string]bool{
		"diff=ada": true, "diff=bash": true, "diff=bibtex": true, "diff=cpp": true, "diff=csharp": true, "diff=css": true,
		"diff=dts": true, "diff=elixir": true, "diff=fortran": true, "diff=fountain": true, "diff=golang": true,
		"diff=html": true, "diff=java": true, "diff=kotlin": true, "diff=markdown": true, "diff=matlab": true,
		"diff=objc": true, "diff=pascal": true, "diff=perl": true, "diff=php": true, "diff=python": true,
		"diff=ruby": true, "diff=rust": true, "diff=scheme": true, "diff=tex": true,
		"merge=text": true, "merge=binary": true, "merge=union": true,
	}
)

func (c *checker) check(ch rawChange) {
	p := ch.path
	if f := c.m.pathFinding(c.repo, p, ch.newMode); f != nil {
		c.out = append(c.out, *f)
		return
	}
	switch ch.newMode {
	case "000000", "100644", "100755", "120000", "160000":
	default:
		c.add(SeverityRefuse, "file-mode", p, "unexpected file mode "+ch.newMode)
	}
	deleted := ch.status == "D"
	base := path.Base(p)

	for _, comp := range strings.Split(p, "/") {
		for _, d := range hooksDirs {
			if strings.EqualFold(comp, d) {
				c.add(SeverityRefuse, "hooks", p, "a change under "+d+"/: hook scripts run on the person's machine")
			}
		}
	}
	if !deleted && base == ".gitattributes" {
		oldDrivers := attrDrivers(c.blob(ch.oldSHA))
		for _, d := range sortedKeys(attrDrivers(c.blob(ch.newSHA))) {
			if oldDrivers[d] {
				continue
			}
			switch {
			case strings.HasPrefix(d, "filter="):
				c.add(SeverityRefuse, "gitattributes-filter", p, "adds "+d+": a filter driver runs a program on checkout and commit")
			case !builtinDrivers[d]:
				c.add(SeverityFlag, "gitattributes-driver", p, "adds "+d+": a diff or merge driver may run a program")
			}
		}
	}
	if !deleted && base == ".gitmodules" {
		c.checkGitmodules(ch)
	}
	if !deleted && gitConfigNames().MatchString(p) {
		content := c.blob(ch.newSHA)
		switch {
		case hooksPathRe().MatchString(content):
			c.add(SeverityRefuse, "hooks-path", p, "sets core.hooksPath in a committed git config file")
		case execConfigRe().MatchString(content):
			c.add(SeverityFlag, "git-config", p, "a committed git config file sets a key that can run a program")
		default:
			c.add(SeverityFlag, "git-config", p, "a committed git config file changed")
		}
	}
	if ch.newMode == "100755" && ch.oldMode != "100755" {
		c.add(SeverityFlag, "executable", p, "the file is newly executable")
	}
	if ch.newMode == "120000" {
		target := c.blob(ch.newSHA)
		if reason := symlinkEscapes(p, target); reason != "" {
			c.add(SeverityRefuse, "symlink-escape", p, reason+" ("+truncateStr(target, 200)+")")
		} else {
			c.add(SeverityFlag, "symlink", p, "a symlink to "+truncateStr(target, 200))
		}
	}
	if ch.newMode == "160000" {
		c.add(SeverityFlag, "submodule-pointer", p, "a submodule commit pointer changed")
	}
}

// pathFinding is the refusal of one changed path that no proposal may
// carry, or nil: a name in .git, one the app's path rule refuses, or one
// of Sluice's own places in repo (the person's repository; "" for a
// workspace that is not handed off). A seal its proposal cannot pass must
// not happen, or the workspace is closed to the edits that would fix it.
func (m *Manager) pathFinding(repo, p, mode string) *Finding {
	if gitpath.NamesMetadata(p) {
		return &Finding{Severity: SeverityRefuse, Rule: "git-path", Path: p, Detail: "the path names repository metadata (.git)"}
	}
	if rule, reason := pathRule(p, mode); reason != "" {
		return &Finding{Severity: SeverityRefuse, Rule: rule, Path: p, Detail: reason}
	}
	if repo != "" && m.opts.OwnPlaces != nil {
		if err := m.opts.OwnPlaces.Check(repo, p); err != nil {
			return &Finding{Severity: SeverityRefuse, Rule: "sluice-configuration", Path: p, Detail: config.OwnPlaceReason}
		}
	}
	return nil
}

// pathRule applies to one changed path the rule the app applies to every
// path of a proposal, and git's own refusal of a .gitmodules that is not
// a file (fsck's gitmodulesBlob and gitmodulesSymlink, which the fetch
// into the person's repository enforces). It returns the rule and why, or
// "" when the path passes.
func pathRule(p, mode string) (rule, reason string) {
	switch {
	case !utf8.ValidString(p):
		return "path-encoding", "the name is not valid UTF-8; rename the file"
	case strings.Contains(p, `\`):
		return "path-backslash", `the name has a backslash, which git on Windows reads as a directory separator; rename the file`
	case !proposal.ValidPath(p):
		return "path", "the name is not a clean repository-relative path; rename the file"
	}
	comps := strings.Split(p, "/")
	for i, comp := range comps {
		if !isGitmodulesName(comp) {
			continue
		}
		if i < len(comps)-1 {
			return "gitmodules-directory", "a directory named .gitmodules: git refuses a .gitmodules that is not a file; rename or remove the directory"
		}
		if mode == "120000" || mode == "160000" {
			return "gitmodules-not-a-file", "a .gitmodules that is not a regular file: git refuses it; make it a file or remove it"
		}
	}
	return "", ""
}

// isGitmodulesName reports whether a path component is one git takes for
// .gitmodules on some file system (any case, trailing dots or spaces, the
// NTFS short name).
func isGitmodulesName(comp string) bool {
	c := strings.ToLower(strings.TrimRight(comp, ". "))
	return c == ".gitmodules" || c == "gitmod~1"
}

func (c *checker) checkGitmodules(ch rawChange) {
	oldURLs := gitmoduleValues(c, ch.oldSHA)
	newVals := gitmoduleValues(c, ch.newSHA)
	for _, k := range sortedKeys(newVals) {
		v := newVals[k]
		switch {
		case strings.HasSuffix(k, ".url"):
			lv := strings.ToLower(v)
			if strings.HasPrefix(v, "-") || strings.Contains(lv, "ext::") || strings.Contains(lv, "fd::") || strings.HasPrefix(lv, "file:") || strings.HasPrefix(v, "/") || strings.HasPrefix(v, ".") {
				c.add(SeverityRefuse, "gitmodules-url", ch.path, k+" is a local, option-like or command transport URL: "+truncateStr(v, 200))
			} else if oldURLs[k] != v {
				c.add(SeverityFlag, "gitmodules-url", ch.path, k+" is now "+truncateStr(v, 200))
			}
		case strings.HasSuffix(k, ".update"):
			if strings.HasPrefix(strings.TrimSpace(v), "!") {
				c.add(SeverityRefuse, "gitmodules-update", ch.path, k+" runs a command")
			}
		case strings.HasSuffix(k, ".path"):
			if strings.HasPrefix(v, "-") || strings.HasPrefix(v, "/") || gitpath.NamesMetadata(v) || strings.Contains("/"+v+"/", "/../") {
				c.add(SeverityRefuse, "gitmodules-path", ch.path, k+" is not a path inside the tree")
			}
		}
	}
}

// gitmoduleValues reads submodule.*.{url,update,path} of a .gitmodules
// blob with git's own config parser (blobs never follow includes).
func gitmoduleValues(c *checker, sha string) map[string]string {
	out := map[string]string{}
	if c.err != nil || strings.Trim(sha, "0") == "" {
		return out
	}
	b, err := c.m.git.run(c.ctx, gitCall{gitDir: c.gitDir, limit: maxCheckedBlob, args: []string{"config", "--blob", sha, "-z", "--get-regexp", `^submodule\..*\.(url|update|path)$`}})
	if err != nil && gitExitCode(err) != 1 { // 1: no such key
		if gitExitCode(err) >= 0 { // git ran and could not read it
			c.add(SeverityRefuse, "gitmodules", "", ".gitmodules cannot be parsed")
			return out
		}
		c.err = err
		return out
	}
	for _, rec := range bytes.Split(bytes.TrimSuffix(b, []byte{0}), []byte{0}) {
		k, v, _ := strings.Cut(string(rec), "\n")
		if k != "" {
			out[strings.ToLower(k)] = v
		}
	}
	return out
}

func attrDrivers(content string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(content, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		for _, m := range attrDriverRe().FindAllStringSubmatch(line, -1) {
			out[m[1]+"="+m[2]] = true
		}
	}
	return out
}

func truncateStr(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
