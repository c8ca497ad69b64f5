package seal

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/sluicehq/sluice/core/gitx"
)

// A stageAll in a small repository is staged in this process, without a
// git add --all, where git's answer is certain: the process costs more
// than the rest of a small seal. What git's add --all gives a copy of the
// person's index is every tracked path as it is on disk (dropped when it
// is gone) and every file git does not ignore beside them; here the same
// set is read from disk, each file's content hashed as git hashes it with
// no conversion (a blob of the file's bytes, a symbolic link's target;
// mode 100755 when the owner may execute it, else 100644, or 120000),
// written loose as git writes a new object (a loose one that exists is
// freshened, one in a pack left there), and the tree written from them
// as write-tree would (tree_local.go). Only where the index has fewer
// than bulkPaths entries and the working tree fewer than bulkPaths files,
// as for staging loose. git stages instead when anything could make its
// answer differ:
//
//   - the repository: objects not SHA-1, a scratch object directory,
//     core.sharedRepository, core.fsync or core.fsyncObjectFiles, a
//     conversion or setting that changes what add reads or writes
//     (core.autocrlf, core.eol, core.filemode or core.symlinks other than
//     true, core.ignoreCase or core.precomposeUnicode other than false,
//     core.bigFileThreshold, core.sparseCheckout, index.sparse,
//     core.worktree), a setting that changes which names git refuses
//     (core.protectNTFS other than true, core.protectHFS other than
//     false) or lets git keep a tracked file's staged blob without
//     reading the file (core.trustctime other than true, core.checkStat
//     other than default, core.ignoreStat, core.fsmonitor,
//     core.untrackedCache, core.splitIndex, index.skipHash or
//     feature.manyFiles other than false), any attribute file git would
//     read (a .gitattributes
//     in the working tree or in the index, info/attributes,
//     core.attributesFile or the default global file, the system file),
//     a relative XDG_CONFIG_HOME or HOME (git reads the default global
//     files from the top of the working tree) or a HOME set empty;
//   - the index: what write-tree's reading refuses (tree_local.go), an
//     assume-unchanged entry, a gitlink, an untracked cache;
//   - the ignore rules: a line of an ignore file (each directory's
//     .gitignore, info/exclude, core.excludesFile or the default global
//     file) that is not a plain pattern: a negation, a "**", "?", "[" or
//     a backslash, trailing whitespace, a carriage return, a byte-order
//     mark; an ignore file that is not a regular file or is larger than
//     maxIgnoreFile (and is not read: one that never ends, a device, or a
//     fifo nobody writes, is git's to read), and the same of the index
//     (maxIndexFile). Without negation, a
//     path is ignored exactly when a pattern of its directory or of one
//     above matches it or a directory above it;
//   - the working tree: a .git in any case anywhere below the top (a
//     repository inside, or a name git refuses), a file that is not
//     regular or a symbolic link, a path to stage whose name git's add
//     could refuse (see gitTakes: with core.protectNTFS, on by default,
//     git refuses .git in its NTFS spellings and, for a symbolic link,
//     .gitmodules in them), a tracked path whose directory is a symbolic
//     link or that became a directory, a file larger than
//     addLocalMaxSize, anything that cannot be read.
//
// TestAddAllLocal_SameAsGit holds it to git's add --all and write-tree on
// random working trees and ignore files, and to leaving git the cases above.

// errAddByGit says that git add must stage.
var errAddByGit = errors.New("seal: git stages this")

// addLocalMaxSize bounds a file staged in this process.
const addLocalMaxSize = 8 << 20

// maxFresh bounds an object the file list is given from memory (see
// Work.fresh); a larger one is read back from the disk.
const maxFresh = 256 << 10

// addAllLocal stages every change of the main working tree into a copy of
// the person's index as git add --all would, and writes its tree; ok is
// false, and nothing but unreferenced objects may have been written,
// where git must stage.
func (w *Work) addAllLocal() (tree string, ok bool) {
	if len(w.env) > 0 {
		return "", false
	}
	repo := w.git.Repo
	if f := repo.ObjectFormat; f != "" && f != "sha1" {
		return "", false
	}
	if !addConfigCertain(repo) {
		return "", false
	}
	index := filepath.Join(repo.GitDir, "index")
	var tracked []indexEntry
	if raw, _, err := readRegular(index, true, maxIndexFile, nil); err == nil {
		idx, err := readIndex(raw)
		if err != nil || idx.untracked {
			return "", false
		}
		tracked = idx.entries
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", false
	}
	if len(tracked) >= bulkPaths {
		return "", false
	}
	for _, e := range tracked {
		if e.assumed || e.mode == 0o160000 {
			return "", false
		}
	}
	// No attribute file outside the working tree, none in the index, and
	// none in a directory of a tracked path (which may be one the walk
	// below passes over as ignored); the walk refuses one anywhere else.
	if !w.noAttributes(nil) {
		return "", false
	}
	seenDir := map[string]bool{}
	for _, e := range tracked {
		for d := path.Dir(e.name); d != "." && !seenDir[d]; d = path.Dir(d) {
			seenDir[d] = true
			_, err := os.Lstat(filepath.Join(repo.Root, filepath.FromSlash(d), ".gitattributes"))
			if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
				return "", false
			}
		}
	}
	ig, err := globalIgnores(repo)
	if err != nil {
		return "", false
	}
	files, err := walkUntracked(repo.Root, tracked, ig)
	if err != nil {
		return "", false
	}
	tw := &treeWriter{objs: gitx.NewPresence(repo.CommonDir), dir: filepath.Join(repo.CommonDir, "objects"), fresh: map[[20]byte]freshObject{}}
	var entries []indexEntry
	dirs := map[string]bool{}
	for _, e := range tracked {
		ent, gone, err := stageTracked(repo.Root, e.name, dirs, tw)
		if err != nil {
			return "", false
		}
		if !gone {
			entries = append(entries, ent)
		}
	}
	for _, name := range files {
		ent, gone, err := stageFile(repo.Root, name, tw)
		if err != nil || gone {
			return "", false
		}
		entries = append(entries, ent)
	}
	slices.SortFunc(entries, func(a, b indexEntry) int { return strings.Compare(a.name, b.name) })
	if dirAndFile(entries) {
		return "", false
	}
	root := &cacheTree{count: -1}
	n, err := tw.update(root, entries, "")
	if err != nil || n != len(entries) {
		return "", false
	}
	w.fresh = tw.fresh
	return hex.EncodeToString(root.oid[:]), true
}

// addConfigCertain reports whether nothing configured changes what git's
// add would stage (see the top of this file).
func addConfigCertain(repo *gitx.Repo) bool {
	for _, k := range []string{"core.sharedrepository", "core.fsync", "core.fsyncobjectfiles", "core.autocrlf", "core.eol",
		"core.bigfilethreshold", "core.worktree", "core.attributesfile"} {
		if _, set := repo.Config(k); set {
			return false
		}
	}
	// core.protectNTFS (on by default) is the rule gitTakes keeps to;
	// core.trustctime off lets git keep a tracked file's old blob when
	// only its ctime says it changed.
	for _, k := range []string{"core.filemode", "core.symlinks", "core.protectntfs", "core.trustctime"} {
		if v, set := repo.Config(k); set && !configTrue(v) {
			return false
		}
	}
	// core.protectHFS refuses more names (.git with characters HFS+
	// ignores); core.ignoreStat marks what add stages assume-unchanged;
	// the others change how git decides a tracked file is unchanged
	// without reading it (fsmonitor, the untracked cache, a split or
	// unhashed index, and feature.manyFiles, which sets some of them).
	for _, k := range []string{"core.ignorecase", "core.precomposeunicode", "core.sparsecheckout", "index.sparse",
		"core.protecthfs", "core.ignorestat", "core.fsmonitor", "core.untrackedcache", "core.splitindex",
		"index.skiphash", "feature.manyfiles"} {
		if v, set := repo.Config(k); set && !configFalse(v) {
			return false
		}
	}
	// core.checkStat minimal compares only part of the stat data.
	if v, set := repo.Config("core.checkstat"); set && !strings.EqualFold(v, "default") {
		return false
	}
	return true
}

func configTrue(v string) bool {
	switch strings.ToLower(v) {
	case "true", "yes", "on", "1":
		return true
	}
	return false
}

func configFalse(v string) bool {
	switch strings.ToLower(v) {
	case "false", "no", "off", "0":
		return true
	}
	return false
}

// ignorePattern is one plain line of an ignore file, from the directory
// base ("" for the top and the files outside the working tree).
type ignorePattern struct {
	base string
	pat  string
	// dirOnly: the line ended with "/"; basename: it has no other "/",
	// so it matches a name at any depth, else the path from base.
	dirOnly, basename bool
}

// parseIgnore reads an ignore file's lines as patterns from base, or
// errAddByGit for a line that is not plain (see the top of this file).
func parseIgnore(b []byte, base string) ([]ignorePattern, error) {
	if bytes.HasPrefix(b, []byte("\xef\xbb\xbf")) || bytes.IndexByte(b, '\r') >= 0 || bytes.IndexByte(b, 0) >= 0 {
		return nil, errAddByGit
	}
	var out []ignorePattern
	for line := range strings.SplitSeq(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		if strings.ContainsAny(line, "\\[]?!\t") || strings.Contains(line, "**") || strings.HasSuffix(line, " ") {
			return nil, errAddByGit
		}
		p := ignorePattern{base: base, pat: line}
		if rest, ok := strings.CutSuffix(p.pat, "/"); ok {
			p.dirOnly, p.pat = true, rest
		}
		if rest, ok := strings.CutPrefix(p.pat, "/"); ok {
			p.pat = rest
		} else {
			p.basename = !strings.Contains(p.pat, "/")
		}
		if p.pat == "" || strings.HasSuffix(p.pat, "/") || strings.HasPrefix(p.pat, "/") || strings.Contains(p.pat, "//") {
			return nil, errAddByGit
		}
		if _, err := path.Match(p.pat, ""); err != nil {
			return nil, errAddByGit
		}
		out = append(out, p)
	}
	return out, nil
}

// matches reports whether p matches the path name (from the top of the
// working tree), a directory when dir.
func (p ignorePattern) matches(name string, dir bool) bool {
	if p.dirOnly && !dir {
		return false
	}
	rel := name
	if p.base != "" {
		r, ok := strings.CutPrefix(name, p.base+"/")
		if !ok {
			return false
		}
		rel = r
	}
	if p.basename {
		rel = path.Base(rel)
	}
	ok, _ := path.Match(p.pat, rel)
	return ok
}

// globalIgnores reads the ignore files outside the working tree:
// info/exclude and core.excludesFile (or the default global file).
func globalIgnores(repo *gitx.Repo) ([]ignorePattern, error) {
	files := []string{filepath.Join(repo.CommonDir, "info", "exclude")}
	if v, set := repo.Config("core.excludesfile"); set {
		if rest, ok := strings.CutPrefix(v, "~/"); ok {
			home, err := os.UserHomeDir()
			if err != nil {
				return nil, errAddByGit
			}
			v = filepath.Join(home, rest)
		}
		if !filepath.IsAbs(v) {
			return nil, errAddByGit
		}
		files = append(files, v)
	} else {
		f, ok := userConfigFile("ignore")
		if !ok {
			return nil, errAddByGit
		}
		if f != "" {
			files = append(files, f)
		}
	}
	var out []ignorePattern
	for _, f := range files {
		// Git follows a symbolic link to these (not to a .gitignore).
		b, _, err := readRegular(f, true, maxIgnoreFile, nil)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, errAddByGit
		}
		ps, err := parseIgnore(b, "")
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	return out, nil
}

// gitTakes reports whether git's add takes the path name (a symbolic
// link when link) as it is, with core.protectNTFS on (git's default on
// every platform) and core.protectHFS off (addConfigCertain): false for
// every name git's verify_path refuses and for more. It refuses, in any
// directory, .git in any case, and, with NTFS's rules, .git or git~1
// followed by dots and spaces, by a colon (an alternate data stream such
// as ::$INDEX_ALLOCATION) or by a backslash (a separator there); for a
// symbolic link also .gitmodules in any case and its NTFS names
// (gitmod~1, gi7eba~1, trailing dots and spaces). Rather than port each
// rule, a component goes to git when it contains a backslash, a colon or
// a tilde (every NTFS short name has one), ends with a dot or a space, is
// .git in any case, or, for a symbolic link, starts with .git in any
// case: rare names, so git staging them costs nothing.
func gitTakes(name string, link bool) bool {
	for c := range strings.SplitSeq(name, "/") {
		if c == "" || strings.ContainsAny(c, "\\:~") || c[len(c)-1] == '.' || c[len(c)-1] == ' ' {
			return false
		}
		if len(c) >= 4 && asciiLower(c[:4]) == ".git" && (len(c) == 4 || link) {
			return false
		}
	}
	return true
}

// asciiLower is s with A to Z lowered, every other byte as it is (git
// compares these names so).
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// userConfigFile is git's file name in the person's configuration
// directory ($XDG_CONFIG_HOME/git/name, else $HOME/.config/git/name), ""
// when neither variable is set; ok is false when git's reading could
// differ from this process's: a relative directory, which git reads from
// the top of the working tree, or a HOME set empty.
func userConfigFile(name string) (file string, ok bool) {
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "git", name), filepath.IsAbs(x)
	}
	if h, set := os.LookupEnv("HOME"); set {
		return filepath.Join(h, ".config", "git", name), filepath.IsAbs(h)
	}
	return "", true
}

// maxIgnoreFile bounds an ignore file read in this process; git reads a
// larger one. maxIndexFile bounds the person's index the same way (one
// of fewer than bulkPaths entries is far smaller).
const (
	maxIgnoreFile = 1 << 20
	maxIndexFile  = 4 << 20
)

// readRegular reads the regular file name, no larger than max bytes,
// through a symbolic link when follow; os.ErrNotExist when there is
// nothing, errAddByGit for anything else there (a device or a fifo, whose
// reading may never end or never start) or anything larger. st, when the
// caller has it, is the file's Lstat. Its Fstat is returned.
func readRegular(name string, follow bool, max int64, st fs.FileInfo) ([]byte, fs.FileInfo, error) {
	var err error
	if st == nil {
		if follow {
			st, err = os.Stat(name)
		} else {
			st, err = os.Lstat(name)
		}
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil, nil, os.ErrNotExist
		}
		if err != nil {
			return nil, nil, errAddByGit
		}
	}
	if !st.Mode().IsRegular() || st.Size() > max {
		return nil, nil, errAddByGit
	}
	// Not blocking and not followed where the file was not: what is
	// opened may have been swapped for a fifo or a link since.
	flags := os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY
	if !follow {
		flags |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(name, flags, 0)
	if err != nil {
		return nil, nil, errAddByGit
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil || !st.Mode().IsRegular() || st.Size() > max {
		return nil, nil, errAddByGit
	}
	b := make([]byte, st.Size(), st.Size()+1)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, nil, errAddByGit
	}
	// Nothing more: a file that grew since is read by git.
	if n, _ := f.Read(make([]byte, 1)); n != 0 {
		return nil, nil, errAddByGit
	}
	return b, st, nil
}

// walkUntracked lists the files under root that git's add --all would
// add beside the tracked ones: not tracked, not ignored; errAddByGit
// where git must walk (see the top of this file).
func walkUntracked(root string, tracked []indexEntry, global []ignorePattern) ([]string, error) {
	isTracked := make(map[string]bool, len(tracked))
	for _, e := range tracked {
		isTracked[e.name] = true
	}
	ignores := map[string][]ignorePattern{}
	ignored := func(name string, dir bool) bool {
		for d := name; ; {
			i := strings.LastIndexByte(d, '/')
			if i < 0 {
				d = ""
			} else {
				d = d[:i]
			}
			for _, p := range ignores[d] {
				if p.matches(name, dir) {
					return true
				}
			}
			if d == "" {
				break
			}
		}
		for _, p := range global {
			if p.matches(name, dir) {
				return true
			}
		}
		return false
	}
	var files []string
	seen := 0
	dirs := []string{""}
	for len(dirs) > 0 {
		d := dirs[len(dirs)-1]
		dirs = dirs[:len(dirs)-1]
		abs := filepath.Join(root, filepath.FromSlash(d))
		// Git reads no .gitignore through a symbolic link.
		if b, _, err := readRegular(filepath.Join(abs, ".gitignore"), false, maxIgnoreFile, nil); err == nil {
			if ignores[d], err = parseIgnore(b, d); err != nil {
				return nil, err
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, errAddByGit
		}
		ents, err := os.ReadDir(abs)
		if err != nil {
			return nil, errAddByGit
		}
		for _, e := range ents {
			n := e.Name()
			if d == "" && n == ".git" {
				continue
			}
			// .git in any case below the top (a repository inside, or a
			// name git refuses), ignored or not; every other name git
			// could refuse is left to git where it is staged (gitTakes).
			if t := asciiLower(strings.TrimRight(n, ". ")); t == ".git" || t == "git~1" || n == ".gitattributes" {
				return nil, errAddByGit
			}
			name := n
			if d != "" {
				name = d + "/" + n
			}
			switch t := e.Type(); {
			case t.IsDir():
				if !ignored(name, true) {
					dirs = append(dirs, name)
				}
			case t.IsRegular() || t&fs.ModeSymlink != 0:
				if seen++; seen >= bulkPaths {
					return nil, errAddByGit
				}
				if !isTracked[name] && !ignored(name, false) {
					files = append(files, name)
				}
			default:
				return nil, errAddByGit
			}
		}
	}
	return files, nil
}

// stageTracked stages the tracked path name as git's add --all would:
// gone when nothing is there any more.
func stageTracked(root, name string, dirs map[string]bool, tw *treeWriter) (indexEntry, bool, error) {
	// Every directory above it must be a directory, not a link to one
	// (git takes the path as gone and adds the link).
	for d := path.Dir(name); d != "."; d = path.Dir(d) {
		if real, ok := dirs[d]; ok {
			if !real {
				return indexEntry{}, true, nil
			}
			continue
		}
		st, err := os.Lstat(filepath.Join(root, filepath.FromSlash(d)))
		switch {
		case err == nil && st.IsDir():
			dirs[d] = true
		case err == nil && st.Mode()&fs.ModeSymlink != 0:
			return indexEntry{}, false, errAddByGit
		case err == nil || errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			// A file where the directory was, or nothing: the path is gone
			// (the walk finds the file).
			dirs[d] = false
			return indexEntry{}, true, nil
		default:
			return indexEntry{}, false, errAddByGit
		}
	}
	return stageFile(root, name, tw)
}

// stageFile hashes the file name (a regular file or a symbolic link) as
// git's add does with no conversion and writes its blob.
func stageFile(root, name string, tw *treeWriter) (indexEntry, bool, error) {
	abs := filepath.Join(root, filepath.FromSlash(name))
	st, err := os.Lstat(abs)
	if errors.Is(err, os.ErrNotExist) {
		return indexEntry{}, true, nil
	}
	if err != nil {
		return indexEntry{}, false, errAddByGit
	}
	e := indexEntry{name: name}
	if !gitTakes(name, st.Mode()&fs.ModeSymlink != 0) {
		return e, false, errAddByGit
	}
	var content []byte
	switch m := st.Mode(); {
	case m.IsRegular():
		if content, st, err = readRegular(abs, false, addLocalMaxSize, st); err != nil {
			return e, false, errAddByGit
		}
		e.mode = 0o100644
		if st.Mode()&0o100 != 0 {
			e.mode = 0o100755
		}
	case m&fs.ModeSymlink != 0:
		target, err := os.Readlink(abs)
		if err != nil {
			return e, false, errAddByGit
		}
		e.mode, content = 0o120000, []byte(target)
	default:
		// A directory where a file was tracked, or a special file.
		return e, false, errAddByGit
	}
	id, err := tw.writeObject("blob", content, false)
	if err != nil {
		return e, false, errAddByGit
	}
	e.oid = id
	return e, false, nil
}

// objectID is git's id of an object of kind with content.
func objectID(kind string, content []byte) [20]byte {
	h := sha1.New()
	h.Write([]byte(kind + " " + strconv.Itoa(len(content)) + "\x00"))
	h.Write(content)
	var id [20]byte
	copy(id[:], h.Sum(nil))
	return id
}
