package connect

import (
	"github.com/sluicehq/sluice/core/jsonc"

	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/config"
)

// Errors callers branch on.
var (
	// ErrUnknownClient: the client name is not one of Clients.
	ErrUnknownClient = errors.New("unknown client")
	// ErrScope: the client does not support that scope, or project scope
	// lacks a usable directory.
	ErrScope = errors.New("unsupported scope")
	// ErrMalformed: an existing file does not parse; it is left untouched.
	ErrMalformed = errors.New("malformed configuration file")
	// ErrConflict: the file defines Sluice's entry in a form this editor
	// does not rewrite (or a parent key is not an object); left untouched.
	ErrConflict = errors.New("configuration conflict")
	// ErrReadOnly: a file that needs changing is read-only.
	ErrReadOnly = errors.New("configuration file is read-only")
	// ErrChanged: a file changed between Plan and Apply.
	ErrChanged = errors.New("configuration file changed since it was read")
	// ErrBadOptions: an option is missing or invalid.
	ErrBadOptions = errors.New("invalid options")
)

// Scope is where a client's configuration lives.
type Scope string

// Scopes.
const (
	ScopeUser    Scope = "user"
	ScopeProject Scope = "project"
)

// Options choose the client and what to write.
type Options struct {
	Client string
	// Scope defaults to user.
	Scope Scope
	// ProjectDir is required for project scope; it must exist.
	ProjectDir string
	// Command is the absolute path of the installed sluice-sidecar.
	Command string
	// Toolsets to enable; nil means config.DefaultToolsets.
	Toolsets []string
	// Args, when set, replace the sidecar's arguments in the entry: a
	// confined session's entry runs the relay to its sidecar.
	Args []string
	// Confined writes a confined session's home, which is Sluice's own:
	// no backups, and the folder TrustDir is recorded as trusted the way
	// the client records a person's answer (the agent in it is confined).
	// Home must exist then, and every file is read and written inside it
	// only, never through a link (see ConfinedHome).
	Confined bool
	TrustDir string

	// Home, Getenv and GOOS locate the files; they default to the real
	// ones and exist so that tests (and the app) can point elsewhere.
	Home   string
	Getenv func(string) string
	GOOS   string
}

// Edit is one thing Sluice sets in a file, for display.
type Edit struct {
	// Key is where, e.g. "mcpServers.sluice" or "[mcp_servers.sluice]".
	Key string
	// Value is what, as it will appear in the file.
	Value string
}

// FileChange is one file that Plan read and would write.
type FileChange struct {
	Path   string
	Format string // "json", "jsonc" or "toml"
	Exists bool
	// Changed is false when the file already says what Sluice would write.
	Changed bool
	Edits   []Edit
	// ReadOnly is set when the file exists and cannot be written; Apply
	// refuses.
	ReadOnly bool

	target string // where the bytes go: Path with symlinks resolved, except in a confined home
	mode   fs.FileMode
	before []byte
	after  []byte
}

// Content is what the file will hold after Apply.
func (f *FileChange) Content() []byte { return slices.Clone(f.after) }

// Plan is what connecting a client would do.
type Plan struct {
	Client   string
	Title    string
	Scope    Scope
	Command  string
	Args     []string
	Toolsets []string
	Files    []*FileChange
	// PreAllowed are the tools pre-allowed in the client's own terms (for
	// example "mcp__sluice__repo_brief"); empty when the client offers no
	// way to do so in a file.
	PreAllowed []string
	// PreAllowNote says how tools were pre-allowed, or why none were.
	PreAllowNote string
	// Steps are what the person still has to do (ChatGPT: everything).
	Steps []string
	// TokenName is set when connecting needs an HTTP token (ChatGPT).
	TokenName string
	// Confined is the command that starts the client confined instead
	// (`sluice run claude`), for the clients Sluice can start.
	Confined string
	// noBackups: the files are Sluice's own (a confined home).
	noBackups bool
	// home is the confined home the files are in (Options.Confined), ""
	// for the person's own configuration.
	home string
}

// Changed reports whether Apply would write anything.
func (p *Plan) Changed() bool {
	for _, f := range p.Files {
		if f.Changed {
			return true
		}
	}
	return false
}

// planner builds a Plan; each client's function uses its helpers.
type planner struct {
	opts  Options
	plan  *Plan
	files map[string]*FileChange
	disk  disk
}

// Make computes what connecting opts.Client would change, reading but never
// writing. A malformed file is ErrMalformed with the file and position.
func Make(opts Options) (*Plan, error) {
	spec, ok := clientByName(opts.Client)
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownClient, opts.Client, strings.Join(ClientNames(), ", "))
	}
	if err := opts.fill(spec); err != nil {
		return nil, err
	}
	p := &planner{
		opts: opts,
		plan: &Plan{
			Client: spec.Name, Title: spec.Title, Scope: opts.Scope, Command: opts.Command,
			Args: serverArgs(opts.Toolsets), Toolsets: opts.Toolsets, noBackups: opts.Confined,
		},
		files: map[string]*FileChange{},
	}
	if opts.Confined {
		h, err := OpenConfinedHome(opts.Home)
		if err != nil {
			return nil, fmt.Errorf("%w: the confined home: %v", ErrBadOptions, err)
		}
		defer h.Close()
		p.disk.home, p.plan.home = h, h.Dir()
	}
	if opts.Args != nil {
		p.plan.Args = slices.Clone(opts.Args)
	}
	if spec.Run != nil {
		p.plan.Confined = "sluice run " + spec.Run.Program
	}
	if err := spec.plan(p); err != nil {
		return nil, err
	}
	if opts.Confined && opts.TrustDir != "" && spec.Run != nil && spec.Run.trust != nil {
		if err := spec.Run.trust(p, opts.TrustDir); err != nil {
			return nil, err
		}
	}
	return p.plan, nil
}

func (o *Options) fill(spec Client) error {
	if o.Scope == "" {
		o.Scope = ScopeUser
	}
	if !slices.Contains(spec.Scopes, o.Scope) {
		var s []string
		for _, sc := range spec.Scopes {
			s = append(s, string(sc))
		}
		if len(s) == 0 {
			s = []string{"none"}
		}
		return fmt.Errorf("%w: %s supports scope %s, not %q", ErrScope, spec.Name, strings.Join(s, " or "), o.Scope)
	}
	if o.Scope == ScopeProject {
		if o.ProjectDir == "" || !filepath.IsAbs(o.ProjectDir) {
			return fmt.Errorf("%w: project scope needs an absolute project directory", ErrScope)
		}
		st, err := os.Stat(o.ProjectDir)
		if err != nil || !st.IsDir() {
			return fmt.Errorf("%w: project directory %s does not exist", ErrScope, o.ProjectDir)
		}
	}
	if o.Command == "" || !filepath.IsAbs(o.Command) {
		return fmt.Errorf("%w: the sidecar command must be an absolute path, got %q", ErrBadOptions, o.Command)
	}
	if o.Toolsets == nil {
		o.Toolsets = slices.Clone(config.DefaultToolsets)
	}
	for _, t := range o.Toolsets {
		if !slices.Contains(config.KnownToolsets, t) {
			return fmt.Errorf("%w: unknown toolset %q (known: %s)", ErrBadOptions, t, strings.Join(config.KnownToolsets, ","))
		}
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.GOOS == "" {
		o.GOOS = runtime.GOOS
	}
	if o.Home == "" {
		h, err := os.UserHomeDir()
		if err != nil || !filepath.IsAbs(h) {
			return fmt.Errorf("%w: cannot find the home directory", ErrBadOptions)
		}
		o.Home = h
	}
	return nil
}

// serverArgs are the sidecar's arguments in every client's entry.
func serverArgs(toolsets []string) []string {
	return []string{"stdio", "--toolsets", strings.Join(toolsets, ",")}
}

// file loads path once per plan.
func (p *planner) file(path, format string) (*FileChange, error) {
	if f := p.files[path]; f != nil {
		return f, nil
	}
	f := &FileChange{Path: path, Format: format, target: p.disk.target(path)}
	if p.opts.Scope == ScopeProject {
		f.mode = 0o644
	} else {
		f.mode = 0o600
	}
	st, err := p.disk.stat(f.target)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("%s: %w", path, err)
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrConflict, path)
	default:
		b, err := p.disk.readFile(f.target)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		f.Exists, f.before, f.mode = true, b, st.Mode().Perm()
		f.ReadOnly = st.Mode().Perm()&0o200 == 0
	}
	f.after = slices.Clone(f.before)
	p.files[path] = f
	p.plan.Files = append(p.plan.Files, f)
	return f, nil
}

func (p *planner) jsonDoc(f *FileChange) (*jsonc.Doc, error) {
	d, err := jsonc.NewDoc(f.after, f.Format == "jsonc")
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v (fix or move the file, then run again; it was not changed)", ErrMalformed, f.Path, err)
	}
	return d, nil
}

// jsonSet sets the member at key in a JSON(C) file.
func (p *planner) jsonSet(path, format string, key []string, v any) error {
	return p.jsonEdit(path, format, strings.Join(key, "."), v, func(d *jsonc.Doc) (bool, error) {
		return d.Set(key, v)
	})
}

// jsonAppend makes the string array at key contain values.
func (p *planner) jsonAppend(path, format string, key []string, values []string) error {
	return p.jsonEdit(path, format, strings.Join(key, ".")+" (contains)", values, func(d *jsonc.Doc) (bool, error) {
		added, err := d.AppendStrings(key, values)
		return len(added) > 0, err
	})
}

// jsonEdit applies edit to a JSON(C) file and lists it as label, showing
// value; edit reports whether it changed the document.
func (p *planner) jsonEdit(path, format, label string, value any, edit func(*jsonc.Doc) (bool, error)) error {
	f, err := p.file(path, format)
	if err != nil {
		return err
	}
	d, err := p.jsonDoc(f)
	if err != nil {
		return err
	}
	changed, err := edit(d)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrConflict, f.Path, err)
	}
	shown, _ := d.Render(value, "")
	f.Edits = append(f.Edits, Edit{Key: label, Value: shown})
	return p.finish(f, d, changed)
}

// jsonDelete removes the member at key from a JSON(C) file, if the file
// exists and has it.
func (p *planner) jsonDelete(path, format string, key []string, why string) error {
	if !p.known(path) {
		return nil
	}
	f, err := p.file(path, format)
	if err != nil {
		return err
	}
	if !f.Exists {
		return nil
	}
	d, err := p.jsonDoc(f)
	if err != nil {
		return err
	}
	removed, err := d.Delete(key)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrConflict, f.Path, err)
	}
	if !removed {
		return nil
	}
	f.Edits = append(f.Edits, Edit{Key: strings.Join(key, ".") + " (removed)", Value: why})
	return p.finish(f, d, true)
}

// known reports whether path is part of the plan already or exists, so
// that a file Sluice only looks into is not listed when it is absent.
func (p *planner) known(path string) bool {
	if p.files[path] != nil {
		return true
	}
	_, err := p.disk.stat(path)
	return err == nil
}

// jsonKeys returns the member names of the object at key in a JSON(C)
// file; none when the file or the object does not exist.
func (p *planner) jsonKeys(path, format string, key []string) ([]string, error) {
	if !p.known(path) {
		return nil, nil
	}
	f, err := p.file(path, format)
	if err != nil || !f.Exists {
		return nil, err
	}
	d, err := p.jsonDoc(f)
	if err != nil {
		return nil, err
	}
	return d.Keys(key)
}

// finish re-parses the edited text: an edit that produced anything but
// valid JSON(C) is a bug, and must never reach the disk.
func (p *planner) finish(f *FileChange, d *jsonc.Doc, changed bool) error {
	if !changed {
		return nil
	}
	if err := d.Check(); err != nil {
		return fmt.Errorf("connect: editing %s produced invalid JSON (%v); nothing was written", f.Path, err)
	}
	f.after = d.Bytes()
	f.Changed = !bytes.Equal(f.after, f.before)
	return nil
}

// tomlTables replaces the tables under prefix with block.
func (p *planner) tomlTables(path string, prefix []string, block string) error {
	f, err := p.file(path, "toml")
	if err != nil {
		return err
	}
	doc, err := parseTOML(f.after)
	if err != nil {
		return fmt.Errorf("%w: %s: %v (fix or move the file, then run again; it was not changed)", ErrMalformed, f.Path, err)
	}
	out, err := doc.ReplaceTables(prefix, block)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	if _, err := parseTOML(out); err != nil {
		return fmt.Errorf("connect: editing %s produced invalid TOML (%v); nothing was written", f.Path, err)
	}
	f.Edits = append(f.Edits, Edit{Key: "[" + strings.Join(prefix, ".") + "]", Value: strings.TrimRight(block, "\n")})
	f.after = out
	f.Changed = !bytes.Equal(f.after, f.before)
	return nil
}

// ownFile sets the whole content of a file that belongs to Sluice.
func (p *planner) ownFile(path, format, content string) error {
	f, err := p.file(path, format)
	if err != nil {
		return err
	}
	f.Edits = append(f.Edits, Edit{Key: "(whole file)", Value: strings.TrimRight(content, "\n")})
	f.after = []byte(content)
	f.Changed = !bytes.Equal(f.after, f.before)
	return nil
}

// Applied is what Apply did.
type Applied struct {
	Written []string
	// Backups of the files that existed, one per written file.
	Backups []string
}

// Apply writes the plan: for each changed file, a backup of the old content
// next to it (<file>.sluice-backup-<time>), then the new content atomically
// with the old file's mode. Every file is checked before any is written, so
// a read-only or changed file leaves all of them untouched.
func (p *Plan) Apply(now time.Time) (*Applied, error) {
	if now.IsZero() {
		now = time.Now()
	}
	var d disk
	if p.home != "" {
		h, err := OpenConfinedHome(p.home)
		if err != nil {
			return nil, err
		}
		defer h.Close()
		d.home = h
	}
	for _, f := range p.Files {
		if !f.Changed {
			continue
		}
		if f.ReadOnly {
			return nil, fmt.Errorf("%w: %s (make it writable, or add Sluice's entry by hand; nothing was written)", ErrReadOnly, f.Path)
		}
		cur, err := d.readFile(f.target)
		switch {
		case errors.Is(err, os.ErrNotExist):
			if f.Exists {
				return nil, fmt.Errorf("%w: %s was removed; run again", ErrChanged, f.Path)
			}
		case err != nil:
			return nil, err
		case !f.Exists || !bytes.Equal(cur, f.before):
			return nil, fmt.Errorf("%w: %s; run again", ErrChanged, f.Path)
		}
	}
	res := &Applied{}
	stamp := now.UTC().Format("20060102T150405Z")
	for _, f := range p.Files {
		if !f.Changed {
			continue
		}
		if f.Exists && !p.noBackups {
			backup, err := backupFile(f.target, stamp, f.before, f.mode)
			if err != nil {
				return res, fmt.Errorf("back up %s: %w (nothing was written to it)", f.Path, err)
			}
			res.Backups = append(res.Backups, backup)
		}
		if err := d.writeFile(f.target, f.after, f.mode, dirMode(p.Scope)); err != nil {
			return res, fmt.Errorf("write %s: %w", f.Path, err)
		}
		res.Written = append(res.Written, f.Path)
	}
	return res, nil
}

func dirMode(s Scope) fs.FileMode {
	if s == ScopeProject {
		return 0o755
	}
	return 0o700
}

// backupFile writes data to a new backup next to target; an older backup
// with the same stamp is kept and a suffix added.
func backupFile(target, stamp string, data []byte, mode fs.FileMode) (string, error) {
	base := target + ".sluice-backup-" + stamp
	for i := 1; i < 100; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		err := writeNew(name, data, mode)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		return name, err
	}
	return "", fmt.Errorf("too many backups named %s*", base)
}

// writeNew creates path exclusively (never overwriting an older backup)
// and syncs it.
func writeNew(path string, data []byte, mode fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	return writeSyncClose(f, data)
}

// writeSyncClose writes data to f, syncs it and closes it (also when
// writing fails).
func writeSyncClose(f *os.File, data []byte) error {
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
