package gitx

import (
	"bytes"
	"context"
	"net/url"
	"path"
	"sort"
	"strings"
)

// Remote is a configured remote.
type Remote struct {
	Name    string `json:"name"`
	URL     string `json:"url" jsonschema:"fetch URL with any credentials removed"`
	PushURL string `json:"pushUrl,omitempty" jsonschema:"push URL when it differs"`
}

// LanguageShare counts tracked files by language.
type LanguageShare struct {
	Language string `json:"language"`
	Files    int    `json:"files"`
}

// Scope says what a repository is and what an agent may do with it.
type Scope struct {
	Root          string          `json:"root" jsonschema:"canonical repository root"`
	AllowedRoot   string          `json:"allowedRoot" jsonschema:"the configured root that allows this repository"`
	GitDir        string          `json:"gitDir"`
	CommonDir     string          `json:"commonDir,omitempty" jsonschema:"shared git directory of a linked worktree"`
	Bare          bool            `json:"bare,omitempty"`
	Linked        bool            `json:"linkedWorktree,omitempty" jsonschema:"this is a linked worktree (git worktree add)"`
	Superproject  string          `json:"superproject,omitempty" jsonschema:"the repository this one is a submodule of"`
	ObjectFormat  string          `json:"objectFormat" jsonschema:"sha1 or sha256"`
	Shallow       bool            `json:"shallow,omitempty" jsonschema:"history is truncated (shallow clone)"`
	Sparse        bool            `json:"sparseCheckout,omitempty"`
	Remotes       []Remote        `json:"remotes"`
	TrackedFiles  int             `json:"trackedFiles"`
	TopLevel      []string        `json:"topLevel" jsonschema:"tracked entries at the root (directories end in /), up to 40"`
	Languages     []LanguageShare `json:"languages" jsonschema:"tracked files by language, most first, up to 8"`
	Submodules    int             `json:"submodules"`
	FiltersNotRun []string        `json:"filtersNotRun,omitempty" jsonschema:"configured clean/smudge filters that Sluice never runs: files using them are read as stored (for git-lfs, pointer files)"`
	Access        string          `json:"access" jsonschema:"what an agent may do here"`
}

// Scope describes the repository: locations, remotes, size, layout and
// languages, from one ls-files and the configuration read at open.
func (repo *Repo) Scope(ctx context.Context) (*Scope, error) {
	s := &Scope{Root: repo.Root, GitDir: repo.GitDir, Bare: repo.Bare, Linked: repo.Linked, Superproject: repo.Superproject,
		ObjectFormat: repo.ObjectFormat, Shallow: repo.Shallow, Remotes: []Remote{}, TopLevel: []string{}, Languages: []LanguageShare{},
		FiltersNotRun: repo.filterDrivers,
		Access:        "read-only: Sluice tools read this repository and run nothing it configures; changes are proposed with propose_* tools and applied only after the person approves them"}
	if repo.CommonDir != repo.GitDir {
		s.CommonDir = repo.CommonDir
	}
	for _, r := range repo.roots {
		if repo.Root == r || strings.HasPrefix(repo.Root, strings.TrimSuffix(r, "/")+"/") {
			if len(r) > len(s.AllowedRoot) {
				s.AllowedRoot = r
			}
		}
	}
	if v, _ := repo.Config("core.sparsecheckout"); v == "true" {
		s.Sparse = true
	}
	s.Remotes = repo.remotes()
	s.Submodules = len(repo.gitmodules())
	if repo.Bare {
		return s, nil
	}
	out, err := repo.git(ctx, &cmd{sub: []string{"ls-files"}, opts: []string{"-z"}, limit: 64 << 20})
	if err != nil {
		return nil, err
	}
	top := map[string]bool{}
	langs := map[string]int{}
	for _, p := range bytes.Split(out.Stdout, []byte{0}) {
		if len(p) == 0 {
			continue
		}
		s.TrackedFiles++
		name := string(p)
		if i := strings.IndexByte(name, '/'); i >= 0 {
			top[name[:i+1]] = true
		} else {
			top[name] = true
		}
		if l := languageOf(name); l != "" {
			langs[l]++
		}
	}
	for t := range top {
		s.TopLevel = append(s.TopLevel, t)
	}
	sort.Strings(s.TopLevel)
	if len(s.TopLevel) > 40 {
		s.TopLevel = s.TopLevel[:40]
	}
	for l, n := range langs {
		s.Languages = append(s.Languages, LanguageShare{Language: l, Files: n})
	}
	sort.Slice(s.Languages, func(i, j int) bool {
		if s.Languages[i].Files != s.Languages[j].Files {
			return s.Languages[i].Files > s.Languages[j].Files
		}
		return s.Languages[i].Language < s.Languages[j].Language
	})
	if len(s.Languages) > 8 {
		s.Languages = s.Languages[:8]
	}
	return s, nil
}

func (repo *Repo) remotes() []Remote {
	byName := map[string]*Remote{}
	var names []string
	for k, v := range repo.config {
		if !strings.HasPrefix(k, "remote.") {
			continue
		}
		rest := k[len("remote."):]
		i := strings.LastIndexByte(rest, '.')
		if i <= 0 {
			continue
		}
		name, key := rest[:i], rest[i+1:]
		if key != "url" && key != "pushurl" {
			continue
		}
		r := byName[name]
		if r == nil {
			r = &Remote{Name: name}
			byName[name] = r
			names = append(names, name)
		}
		if key == "url" {
			r.URL = RedactURL(v)
		} else {
			r.PushURL = RedactURL(v)
		}
	}
	sort.Strings(names)
	out := []Remote{}
	for _, n := range names {
		r := byName[n]
		if r.PushURL == r.URL {
			r.PushURL = ""
		}
		out = append(out, *r)
	}
	return out
}

// RedactURL removes a password or token from a remote URL. A URL is
// configuration, but credentials in it are secrets a model must not see.
func RedactURL(raw string) string {
	if !strings.Contains(raw, "://") {
		return raw // scp-like user@host:path or a local path: no secret
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	if u.User != nil {
		if _, hasPass := u.User.Password(); hasPass {
			u.User = url.User(u.User.Username())
			return strings.Replace(u.String(), "@", ":***@", 1)
		}
		if u.Scheme == "https" || u.Scheme == "http" {
			// https://TOKEN@host is a token, not a user name.
			u.User = nil
			return u.Scheme + "://***@" + strings.TrimPrefix(u.String(), u.Scheme+"://")
		}
	}
	return u.String()
}

var languageByExt = map[string]string{
	".go": "Go", ".rs": "Rust", ".py": "Python", ".js": "JavaScript", ".mjs": "JavaScript", ".cjs": "JavaScript",
	".jsx": "JavaScript", ".ts": "TypeScript", ".tsx": "TypeScript", ".java": "Java", ".kt": "Kotlin", ".kts": "Kotlin",
	".c": "C", ".h": "C", ".cc": "C++", ".cpp": "C++", ".cxx": "C++", ".hpp": "C++", ".hh": "C++", ".cs": "C#",
	".rb": "Ruby", ".php": "PHP", ".swift": "Swift", ".m": "Objective-C", ".mm": "Objective-C", ".scala": "Scala",
	".sh": "Shell", ".bash": "Shell", ".zsh": "Shell", ".ps1": "PowerShell", ".lua": "Lua", ".pl": "Perl",
	".r": "R", ".dart": "Dart", ".ex": "Elixir", ".exs": "Elixir", ".erl": "Erlang", ".hs": "Haskell",
	".ml": "OCaml", ".clj": "Clojure", ".zig": "Zig", ".nim": "Nim", ".sql": "SQL", ".proto": "Protocol Buffers",
	".html": "HTML", ".css": "CSS", ".scss": "CSS", ".vue": "Vue", ".svelte": "Svelte",
	".md": "Markdown", ".rst": "reStructuredText", ".tf": "Terraform", ".nix": "Nix",
	".yaml": "YAML", ".yml": "YAML", ".json": "JSON", ".toml": "TOML", ".xml": "XML",
}

func languageOf(name string) string {
	base := path.Base(name)
	switch base {
	case "Dockerfile", "Containerfile":
		return "Dockerfile"
	case "Makefile", "GNUmakefile":
		return "Makefile"
	}
	return languageByExt[strings.ToLower(path.Ext(base))]
}
