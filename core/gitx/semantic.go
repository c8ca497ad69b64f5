package gitx

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"sort"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
)

// DeclChange is one top-level declaration that changed.
type DeclChange struct {
	Kind             string `json:"kind" jsonschema:"func, method, type, var, const, import or package"`
	Name             string `json:"name" jsonschema:"the name; methods are Receiver.Name; imports are the import path"`
	Change           string `json:"change" jsonschema:"added, removed, modified, or formatting (only layout or comments changed)"`
	SignatureChanged bool   `json:"signatureChanged,omitempty" jsonschema:"func or method whose parameters, results or receiver changed"`
	OldLines         string `json:"oldLines,omitempty" jsonschema:"line range in the old version, start-end"`
	NewLines         string `json:"newLines,omitempty" jsonschema:"line range in the new version, start-end"`
}

// SemanticFile is the structural diff of one file, or an honest fallback.
type SemanticFile struct {
	Path     string       `json:"path"`
	OrigPath string       `json:"origPath,omitempty"`
	Status   string       `json:"status" jsonschema:"added, modified, deleted, renamed, copied or typechange"`
	Language string       `json:"language,omitempty" jsonschema:"set when the file was parsed"`
	Changes  []DeclChange `json:"changes,omitempty" jsonschema:"declaration-level changes, in source order"`
	// FallbackToText is set when no structure could be computed. Reason
	// says why; TextDiff holds the diff_text arguments for this file.
	FallbackToText bool          `json:"fallbackToText" jsonschema:"no structural diff for this file: call diff_text with textDiff"`
	Reason         string        `json:"reason,omitempty" jsonschema:"why the file fell back to text"`
	TextDiff       *TextDiffArgs `json:"textDiff,omitempty" jsonschema:"ready diff_text arguments for this file"`
}

// TextDiffArgs are diff_text arguments for one file.
type TextDiffArgs struct {
	RepoPath string `json:"repoPath"`
	DiffSpec
}

// SemanticDiff is a structural diff.
type SemanticDiff struct {
	Compared  string         `json:"compared"`
	Files     []SemanticFile `json:"files"`
	Parsed    int            `json:"parsed" jsonschema:"files diffed structurally"`
	Fallback  int            `json:"fallback" jsonschema:"files that need diff_text"`
	Truncated bool           `json:"truncated,omitempty" jsonschema:"more files changed than maxFiles"`
}

// Semantic diff limits.
const (
	DefaultSemanticFiles = 50
	MaxSemanticFiles     = 300
	maxSemanticFileBytes = 1 << 20
)

// DiffSemantic compares Go files declaration by declaration using
// go/parser. Every other file, and any Go file that cannot be read or
// parsed on both sides, is reported with FallbackToText and the exact
// diff_text arguments for it. Nothing is guessed.
func (repo *Repo) DiffSemantic(ctx context.Context, spec DiffSpec, maxFiles int) (*SemanticDiff, error) {
	if maxFiles <= 0 {
		maxFiles = DefaultSemanticFiles
	}
	if maxFiles > MaxSemanticFiles {
		return nil, errcode.New(errcode.InvalidArgument, "maxFiles must be at most %d", MaxSemanticFiles)
	}
	opts, revs, paths, compared, err := repo.diffArgs(spec)
	if err != nil {
		return nil, err
	}
	out, err := repo.git(ctx, &cmd{sub: []string{"diff"}, opts: append([]string{"--name-status", "-z", "--no-relative", "--ignore-submodules=dirty", "-M"}, opts...),
		revs: revs, paths: paths, dashdash: true, limit: 16 << 20})
	if err != nil {
		return nil, err
	}
	res := &SemanticDiff{Compared: compared}
	res.Files, res.Truncated = parseNameStatus(out.Stdout, maxFiles)
	// Resolve the two sides once.
	oldRev, newRev, newWorktree, err := repo.semanticSides(ctx, spec)
	if err != nil {
		return nil, err
	}
	specs, wants := repo.semanticBlobs(res.Files, spec, oldRev, newRev, newWorktree)
	blobs, err := repo.readBlobs(ctx, specs, maxSemanticFileBytes)
	if err != nil {
		return nil, err
	}
	src, problem := semanticSources(blobs, wants)
	for i := range res.Files {
		if f := &res.Files[i]; !f.FallbackToText {
			repo.semanticFile(f, spec, src[semanticWant{i, 0}], src[semanticWant{i, 1}], problem[i], newWorktree)
		}
	}
	for _, f := range res.Files {
		if f.FallbackToText {
			res.Fallback++
		} else {
			res.Parsed++
		}
	}
	return res, nil
}

// parseNameStatus reads git diff --name-status -z: a status, then the
// path (for a rename or copy, the old path and then the new), at most
// maxFiles of them; truncated when there were more.
func parseNameStatus(out []byte, maxFiles int) (files []SemanticFile, truncated bool) {
	files = []SemanticFile{}
	recs := strings.Split(string(out), "\x00")
	for i := 0; i+1 < len(recs); i++ {
		st := recs[i]
		if st == "" {
			continue
		}
		f := SemanticFile{Status: rawStatus[st[0]]}
		i++
		f.Path = recs[i]
		if (st[0] == 'R' || st[0] == 'C') && i+1 < len(recs) {
			f.OrigPath = f.Path
			i++
			f.Path = recs[i]
		}
		if len(files) == maxFiles {
			return files, true
		}
		files = append(files, f)
	}
	return files, false
}

// semanticWant is one side (0 old, 1 new) of the file at an index of
// SemanticDiff.Files.
type semanticWant struct{ file, side int }

// semanticBlobs marks the files that cannot be diffed structurally as
// fallbacks and names, for cat-file, the sides of the others that git
// holds (a new side in the working tree is read from disk).
func (repo *Repo) semanticBlobs(files []SemanticFile, spec DiffSpec, oldRev, newRev string, newWorktree bool) (specs []string, wants []semanticWant) {
	for i := range files {
		f := &files[i]
		if !strings.HasSuffix(f.Path, ".go") || (f.OrigPath != "" && !strings.HasSuffix(f.OrigPath, ".go")) {
			repo.fallback(f, spec, "not Go source: only Go is parsed structurally")
			continue
		}
		if f.Status == "typechange" {
			repo.fallback(f, spec, "the file changed type (for example to a symlink)")
			continue
		}
		oldPath := f.Path
		if f.OrigPath != "" {
			oldPath = f.OrigPath
		}
		if f.Status != "added" {
			specs = append(specs, oldRev+":"+oldPath)
			wants = append(wants, semanticWant{i, 0})
		}
		if f.Status != "deleted" && !newWorktree {
			specs = append(specs, newRev+":"+f.Path)
			wants = append(wants, semanticWant{i, 1})
		}
	}
	return specs, wants
}

// semanticSources sorts what cat-file read into each side's source, and
// the reason a file cannot be diffed when a side is missing or too big.
func semanticSources(blobs []blob, wants []semanticWant) (src map[semanticWant][]byte, problem map[int]string) {
	src, problem = map[semanticWant][]byte{}, map[int]string{}
	for k, w := range wants {
		b := blobs[k]
		switch {
		case b.missing:
			problem[w.file] = "a side could not be read from git"
		case b.data == nil:
			problem[w.file] = fmt.Sprintf("larger than %d bytes", maxSemanticFileBytes)
		default:
			src[w] = b.data
		}
	}
	return src, problem
}

// semanticFile diffs f's declarations from its old and new sources (the
// new one read from the working tree when newWorktree), or makes it a
// fallback with the reason: problem, when a side could not be read.
func (repo *Repo) semanticFile(f *SemanticFile, spec DiffSpec, oldSrc, newSrc []byte, problem string, newWorktree bool) {
	if problem != "" {
		repo.fallback(f, spec, problem)
		return
	}
	if newWorktree && f.Status != "deleted" {
		data, reason := repo.semanticWorktreeSide(f.Path)
		if reason != "" {
			repo.fallback(f, spec, reason)
			return
		}
		newSrc = data
	}
	changes, err := goDeclDiff(oldSrc, newSrc, f.Status != "added", f.Status != "deleted")
	if err != nil {
		repo.fallback(f, spec, err.Error())
		return
	}
	f.Language = "go"
	f.Changes = changes
}

// semanticWorktreeSide reads a file's new side from the working tree, or
// says why it cannot be diffed.
func (repo *Repo) semanticWorktreeSide(path string) (data []byte, reason string) {
	data, _, err := repo.readWorktreeFile(path, maxSemanticFileBytes)
	switch {
	case err != nil:
		return nil, "the working-tree file cannot be read as a regular file"
	case data == nil:
		return nil, fmt.Sprintf("larger than %d bytes", maxSemanticFileBytes)
	}
	return data, ""
}

func (repo *Repo) fallback(f *SemanticFile, spec DiffSpec, reason string) {
	f.FallbackToText = true
	f.Reason = reason
	t := spec
	t.Paths = []string{f.Path}
	if f.OrigPath != "" {
		t.Paths = append(t.Paths, f.OrigPath)
	}
	f.TextDiff = &TextDiffArgs{RepoPath: repo.Root, DiffSpec: t}
}

// semanticSides names the two sides for cat-file. An old side of ""
// addresses the index (":<path>"); newWorktree means the new side is read
// from the working tree, and otherwise a newRev of "" is the index.
func (repo *Repo) semanticSides(ctx context.Context, s DiffSpec) (oldRev, newRev string, newWorktree bool, err error) {
	base := s.Base
	if s.MergeBase {
		other := s.Target
		if other == "" {
			other = "HEAD"
		}
		out, err := repo.git(ctx, &cmd{sub: []string{"merge-base"}, revs: []string{base, other}, limit: 4096})
		if err != nil {
			return "", "", false, err
		}
		base = strings.TrimSpace(string(out.Stdout))
	}
	switch {
	case s.Target != "":
		return base, s.Target, false, nil
	case s.Staged:
		if base == "" {
			base = "HEAD"
		}
		return base, "", false, nil
	case base != "":
		return base, "", true, nil
	default:
		return "", "", true, nil
	}
}

// goDecl is one top-level declaration.
type goDecl struct {
	kind, name string
	raw        string // exact source
	norm       string // printed without comments or layout
	sig        string // funcs: receiver, parameters, results
	start, end int
}

// goDeclDiff parses both versions (when present) and compares their
// declarations.
func goDeclDiff(oldSrc, newSrc []byte, hasOld, hasNew bool) ([]DeclChange, error) {
	var oldDecls, newDecls map[string]goDecl
	var oldPkg, newPkg string
	var err error
	if hasOld {
		if oldDecls, oldPkg, err = goDecls(oldSrc); err != nil {
			return nil, fmt.Errorf("the old version does not parse as Go: %v", err)
		}
	}
	if hasNew {
		if newDecls, newPkg, err = goDecls(newSrc); err != nil {
			return nil, fmt.Errorf("the new version does not parse as Go: %v", err)
		}
	}
	changes := []DeclChange{}
	if hasOld && hasNew && oldPkg != newPkg {
		changes = append(changes, DeclChange{Kind: "package", Name: newPkg, Change: "modified"})
	}
	for key, n := range newDecls {
		o, ok := oldDecls[key]
		lines := fmt.Sprintf("%d-%d", n.start, n.end)
		switch {
		case !ok:
			changes = append(changes, DeclChange{Kind: n.kind, Name: n.name, Change: "added", NewLines: lines})
		case o.raw == n.raw:
		case o.norm == n.norm:
			changes = append(changes, DeclChange{Kind: n.kind, Name: n.name, Change: "formatting", OldLines: fmt.Sprintf("%d-%d", o.start, o.end), NewLines: lines})
		default:
			changes = append(changes, DeclChange{Kind: n.kind, Name: n.name, Change: "modified", SignatureChanged: o.sig != n.sig,
				OldLines: fmt.Sprintf("%d-%d", o.start, o.end), NewLines: lines})
		}
	}
	for key, o := range oldDecls {
		if _, ok := newDecls[key]; !ok {
			changes = append(changes, DeclChange{Kind: o.kind, Name: o.name, Change: "removed", OldLines: fmt.Sprintf("%d-%d", o.start, o.end)})
		}
	}
	sort.SliceStable(changes, func(i, j int) bool {
		return lineKey(changes[i]) < lineKey(changes[j])
	})
	return changes, nil
}

func lineKey(c DeclChange) string {
	l := c.NewLines
	if l == "" {
		l = c.OldLines
	}
	var n int
	fmt.Sscanf(l, "%d", &n)
	return fmt.Sprintf("%08d%s", n, c.Name)
}

func goDecls(src []byte) (map[string]goDecl, string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		msg := err.Error()
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		return nil, "", fmt.Errorf("%s", strings.TrimPrefix(msg, "x.go:"))
	}
	decls := map[string]goDecl{}
	add := func(kind, name string, node ast.Node, sig string) {
		pos := node.Pos()
		if doc := docOf(node); doc != nil {
			pos = doc.Pos()
		}
		d := goDecl{kind: kind, name: name, sig: sig,
			start: fset.Position(pos).Line, end: fset.Position(node.End()).Line}
		// raw includes the doc comment, so that a doc-only edit shows as
		// formatting rather than not at all.
		d.raw = string(src[fset.Position(pos).Offset:fset.Position(node.End()).Offset])
		d.norm = printNode(fset, node)
		key := kind + " " + name
		// Several init funcs or blank vars: keep them apart by order.
		for i := 2; ; i++ {
			if _, dup := decls[key]; !dup {
				break
			}
			key = fmt.Sprintf("%s %s#%d", kind, name, i)
		}
		decls[key] = d
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			name, kind := d.Name.Name, "func"
			sig := printNode(fset, d.Type)
			if d.Recv != nil && len(d.Recv.List) > 0 {
				kind = "method"
				name = recvName(d.Recv.List[0].Type) + "." + name
				sig = printNode(fset, d.Recv) + sig
			}
			add(kind, name, d, sig)
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				var node ast.Node = spec
				if len(d.Specs) == 1 {
					node = d // include the keyword and doc
				}
				switch s := spec.(type) {
				case *ast.ImportSpec:
					add("import", strings.Trim(s.Path.Value, "\"`"), spec, "")
				case *ast.TypeSpec:
					add("type", s.Name.Name, node, "")
				case *ast.ValueSpec:
					kind := "var"
					if d.Tok == token.CONST {
						kind = "const"
					}
					for _, n := range s.Names {
						add(kind, n.Name, node, "")
					}
				}
			}
		}
	}
	return decls, f.Name.Name, nil
}

func docOf(n ast.Node) *ast.CommentGroup {
	switch d := n.(type) {
	case *ast.FuncDecl:
		return d.Doc
	case *ast.GenDecl:
		return d.Doc
	case *ast.TypeSpec:
		return d.Doc
	case *ast.ValueSpec:
		return d.Doc
	case *ast.ImportSpec:
		return d.Doc
	}
	return nil
}

func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.IndexListExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	case *ast.ParenExpr:
		return recvName(t.X)
	}
	return "?"
}

// printNode prints a node in canonical layout, without comments.
func printNode(fset *token.FileSet, n ast.Node) string {
	var b bytes.Buffer
	if err := format.Node(&b, fset, stripComments(n)); err != nil {
		return ""
	}
	return b.String()
}

// stripComments drops doc comments so that a comment-only edit is seen as
// formatting; comments inside bodies are not printed for a bare node.
func stripComments(n ast.Node) ast.Node {
	switch d := n.(type) {
	case *ast.FuncDecl:
		c := *d
		c.Doc = nil
		return &c
	case *ast.GenDecl:
		c := *d
		c.Doc = nil
		c.Specs = make([]ast.Spec, len(d.Specs))
		for i, s := range d.Specs {
			c.Specs[i] = stripComments(s).(ast.Spec)
		}
		return &c
	case *ast.TypeSpec:
		c := *d
		c.Doc, c.Comment = nil, nil
		return &c
	case *ast.ValueSpec:
		c := *d
		c.Doc, c.Comment = nil, nil
		return &c
	case *ast.ImportSpec:
		c := *d
		c.Doc, c.Comment = nil, nil
		return &c
	}
	return n
}
