package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Sluice's own configuration decides what an agent may do: the policy
// file's rules approve proposals, config.json names the allowed roots, the
// state directory holds the journal and the audit ledger. None of it may
// ever be what a proposal changes, wherever it lies (inside an allowed
// root, reached through a symlink, or under another spelling of the same
// directory), or an agent could approve its own future proposals.

// ErrOwnPlace is returned for a path that is Sluice's own configuration
// or data.
//
//lint:ignore ST1005 Sluice is the product's name, and this sentence is shown to the person as written.
var ErrOwnPlace = errors.New("Sluice's own configuration")

// OwnPlaceReason is what the person is told when a proposal names one of
// Sluice's own places.
const OwnPlaceReason = "this is Sluice's own configuration; only you can change it, in Settings or with the CLI"

// Places are Sluice's own files and directories, canonical (symlinks
// resolved), as one path or a directory whose whole content is Sluice's.
type Places struct {
	dirs  []string
	files []string
}

// OwnPlaces lists the places of c: the config and state directories (with
// config.json, the gateway file, the journal, the ledger and the
// workspaces in them), the policy file and the audit key files, wherever
// they are configured.
func (c *Config) OwnPlaces() *Places {
	p := &Places{}
	for _, d := range []string{c.ConfigDir, c.StateDir} {
		if d != "" {
			p.dirs = appendCanon(p.dirs, d)
		}
	}
	for _, f := range []string{c.PolicyFile, c.DefaultPolicyFileIfSet(), c.AuditKeyFile, c.auditPubIfSet()} {
		if f != "" {
			p.files = appendCanon(p.files, f)
		}
	}
	return p
}

// DefaultPolicyFileIfSet is DefaultPolicyFile when the config directory is
// known, else "".
func (c *Config) DefaultPolicyFileIfSet() string {
	if c.ConfigDir == "" {
		return ""
	}
	return c.DefaultPolicyFile()
}

func (c *Config) auditPubIfSet() string {
	if c.AuditKeyFile == "" {
		return ""
	}
	return c.AuditPublicKeyFile()
}

// appendCanon appends both the cleaned path and its canonical form (they
// differ when a component is a symlink), once each.
func appendCanon(list []string, p string) []string {
	for _, v := range []string{filepath.Clean(p), CanonicalPath(p)} {
		if v != "" && !contains(list, v) {
			list = append(list, v)
		}
	}
	return list
}

// Contains reports which of Sluice's places the absolute path abs is or
// lies in, after resolving its symlinks (a file that does not exist yet is
// resolved through its nearest existing parent). ok is false for any other
// path.
func (p *Places) Contains(abs string) (place string, ok bool) {
	if p == nil || !filepath.IsAbs(abs) {
		return "", false
	}
	return p.match(filepath.Clean(abs), CanonicalPath(abs))
}

// match reports which place the path, as written (clean) and resolved
// (canon), is or lies in.
func (p *Places) match(clean, canon string) (place string, ok bool) {
	cands := []string{clean}
	if canon != clean {
		cands = append(cands, canon)
	}
	for _, cand := range cands {
		for _, f := range p.files {
			if cand == f {
				return f, true
			}
		}
		for _, d := range p.dirs {
			if within(cand, d) {
				return d, true
			}
		}
	}
	return "", false
}

// Checker checks many paths of one proposal against the places,
// resolving the symlinks of each directory once: a commit of 1,000 files
// in 50 directories resolves 50 directories instead of every component of
// 1,000 paths. A directory resolved once stays so for the Checker's life,
// so a Checker is for one check and is then dropped.
type Checker struct {
	p    *Places
	dirs map[string]string
}

// Checker returns a Checker of p.
func (p *Places) Checker() *Checker { return &Checker{p: p, dirs: map[string]string{}} }

// Contains is Places.Contains.
func (c *Checker) Contains(abs string) (place string, ok bool) {
	if c.p == nil || !filepath.IsAbs(abs) {
		return "", false
	}
	abs = filepath.Clean(abs)
	return c.p.match(abs, c.canonical(abs))
}

// canonical is CanonicalPath(abs) for a clean abs. A path that exists and
// is not a symlink resolves to its directory's canonical form with its own
// name; anything else (a symlink, a path that does not exist) is resolved
// whole.
func (c *Checker) canonical(abs string) string {
	dir := filepath.Dir(abs)
	st, err := os.Lstat(abs)
	if dir == abs || err != nil || st.Mode()&fs.ModeSymlink != 0 {
		return CanonicalPath(abs)
	}
	d, ok := c.dirs[dir]
	if !ok {
		d = CanonicalPath(dir)
		c.dirs[dir] = d
	}
	return filepath.Join(d, filepath.Base(abs))
}

// Check returns an ErrOwnPlace error naming rel (a path of repo) when
// repo/rel is one of Sluice's places.
func (p *Places) Check(repo, rel string) error {
	abs := filepath.Join(repo, filepath.FromSlash(rel))
	if _, ok := p.Contains(abs); ok {
		return fmt.Errorf("%w: %s: %s", ErrOwnPlace, rel, OwnPlaceReason)
	}
	return nil
}

// CanonicalPath resolves the symlinks of abs. A path that does not exist
// (yet) is resolved through its nearest existing parent, the rest
// appended as written, so that a file a proposal would create is compared
// where it would land.
func CanonicalPath(abs string) string { return canonicalPath(abs, 0) }

func canonicalPath(abs string, depth int) string {
	abs = filepath.Clean(abs)
	rest := ""
	cur := abs
	for range 256 {
		canon, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(canon, rest)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			// A loop or a component that is a file: compare as written.
			return abs
		}
		// A dangling symlink still says where a file would be created.
		if st, lerr := os.Lstat(cur); lerr == nil && st.Mode()&fs.ModeSymlink != 0 && depth < 40 {
			target, rerr := os.Readlink(cur)
			if rerr != nil {
				return abs
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(cur), target)
			}
			return canonicalPath(filepath.Join(target, rest), depth+1)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
	return abs
}

// within reports whether p is dir or lies under it.
func within(p, dir string) bool {
	if p == dir {
		return true
	}
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// ErrPolicyInRoot is returned when the policy file lies inside an allowed
// root, where an agent's proposal could write the rules that approve its
// own proposals.
var ErrPolicyInRoot = errors.New("the policy file is inside an allowed root")

// checkPolicyOutsideRoots refuses a policy file inside any of roots,
// comparing canonical paths. One inside Sluice's config directory is
// accepted wherever that directory is: the whole directory is refused as
// a proposal's target (see Places), a root around it or not.
func checkPolicyOutsideRoots(policyFile, configDir string, roots []string) error {
	if policyFile == "" {
		return nil
	}
	canon := CanonicalPath(policyFile)
	if configDir != "" && within(canon, CanonicalPath(configDir)) {
		return nil
	}
	for _, r := range roots {
		rc := CanonicalPath(r)
		if within(canon, rc) || within(filepath.Clean(policyFile), filepath.Clean(r)) {
			return fmt.Errorf("%w: %w: policyFile %s is inside the allowed root %s, where an agent's proposal could rewrite the rules that approve its proposals; move the policy file out of the root (for example to the Sluice config directory) or remove the root", ErrInvalid, ErrPolicyInRoot, policyFile, r)
		}
	}
	return nil
}
