package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/jsonc"
	"github.com/sluicehq/sluice/core/proposal"
)

// File is a policy file read for editing. Its edits are textual (package
// jsonc): a rule is appended to or removed from the top-level rules list
// and every other byte — the person's comments, formatting, key order,
// their own rules — stays as it was. Save writes the result atomically,
// and only over the content that was read.
type File struct {
	// Path is the file as configured; a symlink is written through to its
	// target, so that a policy kept in a dotfiles repository stays there.
	Path string
	// Policy is the parsed content; nil while the file does not exist.
	Policy *Policy

	src    []byte
	sum    [32]byte
	exists bool
	mode   fs.FileMode
	edited bool
}

// newFile is what a policy file holds when Sluice creates it.
const newFile = "{\n  \"version\": 1,\n  \"rules\": []\n}\n"

// ReadFile reads the policy file at path for editing. A missing file is
// not an error here: the first rule creates it. A malformed one is
// ErrInvalid, and nothing will be written over it.
func ReadFile(path string) (*File, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("%w: %s: the policy file must be an absolute path", ErrInvalid, path)
	}
	f := &File{Path: path, mode: 0o600}
	b, st, err := readCapped(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		f.sum = sha256.Sum256(nil)
		return f, nil
	case err != nil:
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
	}
	p, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (it was not changed)", path, err)
	}
	f.Policy, f.src, f.sum, f.exists, f.mode = p, b, sha256.Sum256(b), true, st.Mode().Perm()
	return f, nil
}

// readCapped reads a regular file (through symlinks) of at most
// maxFileBytes.
func readCapped(path string) ([]byte, fs.FileInfo, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, nil, errors.New("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(fh, maxFileBytes+1))
	if err != nil {
		return nil, nil, err
	}
	if len(b) > maxFileBytes {
		return nil, nil, fmt.Errorf("larger than %d bytes", maxFileBytes)
	}
	return b, st, nil
}

// Exists reports whether the file existed when it was read.
func (f *File) Exists() bool { return f.exists }

// Digest is the SHA-256, in hex, of the content read or last saved.
func (f *File) Digest() string { return hex.EncodeToString(f.sum[:]) }

// RuleKeys lists every rule of p as "agent/name", sorted: what a change
// of the file added or removed is the difference of two lists.
func (p *Policy) RuleKeys() []string {
	out := []string{}
	for _, r := range p.All() {
		out = append(out, r.Agent+"/"+r.Name)
	}
	slices.Sort(out)
	return out
}

// Listed is one rule of a file, with where it lives.
type Listed struct {
	Rule
	// Agent is the agent the rule applies to ("*" for every agent).
	Agent string `json:"agent"`
	// InAgentEntry is true for a rule written inside an agent's entry (by
	// hand), false for one in the top-level rules list.
	InAgentEntry bool `json:"inAgentEntry"`
}

// All lists every auto-approve rule: the top-level rules in file order,
// then those inside agents' entries by agent name.
func (p *Policy) All() []Listed {
	if p == nil {
		return nil
	}
	var out []Listed
	for _, r := range p.Rules {
		out = append(out, Listed{Rule: r, Agent: r.Agent})
	}
	agents := make([]string, 0, len(p.Agents))
	for a := range p.Agents {
		agents = append(agents, a)
	}
	slices.Sort(agents)
	for _, a := range agents {
		for _, r := range p.Agents[a].AutoApprove {
			out = append(out, Listed{Rule: r, Agent: a, InAgentEntry: true})
		}
	}
	return out
}

// AddRule appends r to the top-level rules. r must name its agent, must
// not approve destructive work, and its name must be unused; the file as
// it would be written is parsed in full before anything changes, so a
// refused rule leaves the File as it was.
func (f *File) AddRule(r Rule) error {
	if r.MaxRisk == proposal.RiskDestructive.String() {
		return fmt.Errorf("%w: rule %q: %w", ErrInvalid, r.Name, ErrDestructive)
	}
	// A rule made from a card is as narrow as the card: its repository
	// and the kind of identity its agent had. Only a person's own edit of
	// the file makes a rule for every repository.
	if r.FromProposal != "" && (len(r.Repos) == 0 || r.Identity == "") {
		return fmt.Errorf("%w: rule %q: a rule made from a card names the card's repository and the kind of identity it trusts", ErrInvalid, r.Name)
	}
	if f.Policy != nil && f.nameUsed(r.Name) {
		return fmt.Errorf("%w: rule name %q is already used in %s", ErrInvalid, r.Name, f.Path)
	}
	src := f.src
	if !f.exists || len(bytes.TrimSpace(src)) == 0 {
		src = []byte(newFile)
	}
	d, err := jsonc.NewDoc(src, true)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalid, f.Path, err)
	}
	if err := d.Append([]string{"rules"}, r.document()); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalid, f.Path, err)
	}
	return f.replace(d.Bytes())
}

// RemoveRule removes the rule named name that applies to agent, from the
// top-level rules or from the agent's entry.
func (f *File) RemoveRule(agent, name string) error {
	if f.Policy == nil {
		return fmt.Errorf("%w: %q", ErrNoRule, name)
	}
	d, err := jsonc.NewDoc(f.src, true)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalid, f.Path, err)
	}
	path, i := f.locate(d, agent, name)
	if path == nil {
		return fmt.Errorf("%w: %q for %s", ErrNoRule, name, agent)
	}
	if err := d.DeleteElement(path, i); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalid, f.Path, err)
	}
	return f.replace(d.Bytes())
}

// locate finds the rule in the text being edited (the parsed Policy has
// already lost duplicates and order of agents, so the text is searched).
func (f *File) locate(d *jsonc.Doc, agent, name string) ([]string, int) {
	find := func(path []string, wantAgent bool) int {
		v, _ := d.Value(path)
		list, _ := v.([]any)
		for i := len(list) - 1; i >= 0; i-- {
			m, _ := list[i].(map[string]any)
			if m["name"] == name && (!wantAgent || m["agent"] == agent) {
				return i
			}
		}
		return -1
	}
	if i := find([]string{"rules"}, true); i >= 0 {
		return []string{"rules"}, i
	}
	if _, ok := f.Policy.Agents[agent]; ok {
		path := []string{"agents", agent, "autoApprove"}
		if i := find(path, false); i >= 0 {
			return path, i
		}
	}
	return nil, -1
}

func (f *File) replace(src []byte) error {
	p, err := Parse(src)
	if err != nil {
		return fmt.Errorf("%s: the edit would leave an invalid file, so nothing changed: %w", f.Path, err)
	}
	f.src, f.Policy, f.edited = src, p, true
	return nil
}

func (f *File) nameUsed(name string) bool {
	return slices.ContainsFunc(f.Policy.All(), func(l Listed) bool { return l.Name == name })
}

// notNameChars are what a rule name may not hold (ruleName).
var notNameChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// UniqueName returns base, or base with a number after it, such that no
// rule in the file has that name. base is cut to what a name allows.
func (f *File) UniqueName(base string) string {
	base = strings.Trim(notNameChars.ReplaceAllString(base, "-"), "-.")
	if base == "" {
		base = "rule"
	}
	if len(base) > 56 {
		base = base[:56]
	}
	if f.Policy == nil || !f.nameUsed(base) {
		return base
	}
	for n := 2; ; n++ {
		if name := base + "-" + strconv.Itoa(n); !f.nameUsed(name) {
			return name
		}
	}
}

// Bytes is the file's content as it would be saved.
func (f *File) Bytes() []byte { return f.src }

// Save writes the edited file: only if the file on disk is still exactly
// what ReadFile read (or still absent), via a temporary file that is
// fsynced and renamed into place, keeping the file's permissions. A file
// that changed in between is ErrChanged and is left as it is.
func (f *File) Save() error {
	if !f.edited {
		return nil
	}
	target := f.Path
	if resolved, err := filepath.EvalSymlinks(f.Path); err == nil {
		target = resolved
	}
	cur, _, err := readCapped(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if f.exists {
			return fmt.Errorf("%w: %s was removed; open the rules again", ErrChanged, f.Path)
		}
	case err != nil:
		return fmt.Errorf("policy: %s: %w", f.Path, err)
	case !f.exists || sha256.Sum256(cur) != f.sum:
		return fmt.Errorf("%w: %s was edited since Sluice read it; nothing was written, open the rules again", ErrChanged, f.Path)
	}
	if err := config.WriteFileAtomic(target, f.src, f.mode); err != nil {
		return fmt.Errorf("policy: write %s: %w", f.Path, err)
	}
	f.sum, f.exists, f.edited = sha256.Sum256(f.src), true, false
	return nil
}

// document is the rule as it is written into the file: keys in reading
// order, and only those that are set.
func (r Rule) document() jsonc.Ordered {
	o := jsonc.Ordered{{K: "name", V: r.Name}, {K: "agent", V: r.Agent}}
	if r.Identity != "" {
		o = append(o, jsonc.KV{K: "identity", V: r.Identity})
	}
	if len(r.Repos) > 0 {
		o = append(o, jsonc.KV{K: "repos", V: r.Repos})
	}
	o = append(o, jsonc.KV{K: "ops", V: r.Ops})
	if len(r.Refs) > 0 {
		o = append(o, jsonc.KV{K: "refs", V: r.Refs})
	}
	if len(r.Paths) > 0 {
		o = append(o, jsonc.KV{K: "paths", V: r.Paths})
	}
	if r.MaxRisk != "" {
		o = append(o, jsonc.KV{K: "maxRisk", V: r.MaxRisk})
	}
	if !r.ExpiresAt.IsZero() {
		o = append(o, jsonc.KV{K: "expiresAt", V: r.ExpiresAt.UTC().Format(time.RFC3339)})
	}
	if !r.CreatedAt.IsZero() {
		o = append(o, jsonc.KV{K: "createdAt", V: r.CreatedAt.UTC().Format(time.RFC3339)})
	}
	if r.FromProposal != "" {
		o = append(o, jsonc.KV{K: "fromProposal", V: r.FromProposal})
	}
	return o
}
