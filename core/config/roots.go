package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The app is the authority on the allowed roots and the workspace image:
// whatever it runs with is what config.json says, so that every sidecar
// reads the same values however its agent starts it. Codex, for one,
// starts MCP servers with an environment cleaned of everything it was not
// told to pass, so an environment variable given to the app never reaches
// them; config.json, found from HOME alone, does.

// File is config.json.
func (c *Config) File() string { return filepath.Join(c.ConfigDir, "config.json") }

// FileRoots returns the allowed roots as config.json states them,
// whatever the environment overrides.
func (c *Config) FileRoots() ([]string, error) {
	m, err := c.readFileMap()
	if err != nil {
		return nil, err
	}
	var roots []string
	if raw, ok := m["allowedRoots"]; ok {
		if err := json.Unmarshal(raw, &roots); err != nil {
			return nil, fmt.Errorf("%w: %s: allowedRoots: %v", ErrInvalid, c.File(), err)
		}
	}
	return roots, nil
}

// AddRoot adds dir, canonicalized, to the allowed roots in config.json and
// returns the roots the file now holds. A root already there is not added
// twice.
func (c *Config) AddRoot(dir string) ([]string, error) {
	canon, err := CanonicalRoots([]string{dir})
	if err != nil {
		return nil, err
	}
	roots, err := c.FileRoots()
	if err != nil {
		return nil, err
	}
	if !slices.Contains(roots, canon[0]) {
		roots = append(roots, canon[0])
	}
	return roots, c.SaveRoots(roots)
}

// ErrNoSuchRoot is returned by RemoveRoot when config.json does not list
// the directory.
var ErrNoSuchRoot = errors.New("not an allowed root")

// RemoveRoot removes dir from the allowed roots in config.json, matching it
// as written or canonicalized (a root whose directory is gone can still be
// removed), and returns the roots the file now holds.
func (c *Config) RemoveRoot(dir string) ([]string, error) {
	roots, err := c.FileRoots()
	if err != nil {
		return nil, err
	}
	match := []string{filepath.Clean(dir)}
	if canon, err := filepath.EvalSymlinks(dir); err == nil {
		match = append(match, canon)
	}
	kept := roots[:0:0]
	for _, r := range roots {
		if !slices.Contains(match, filepath.Clean(r)) {
			kept = append(kept, r)
		}
	}
	if len(kept) == len(roots) {
		return roots, fmt.Errorf("%w: %s (allowed roots: %v)", ErrNoSuchRoot, dir, roots)
	}
	return kept, c.SaveRoots(kept)
}

// CanonicalRoots validates roots exactly as Load does and returns them
// canonical (absolute, symlinks resolved, existing directories).
func CanonicalRoots(roots []string) ([]string, error) {
	probe := &Config{AllowedRoots: roots, PendingExpiry: DefaultPendingExpiry, Retention: DefaultRetention, RestorePointRetention: DefaultRestorePointRetention, AuditKeyFile: "/"}
	if err := probe.validate(); err != nil {
		return nil, err
	}
	return probe.AllowedRoots, nil
}

// SaveRoots validates roots and writes them, canonical, into config.json,
// keeping every other key of the file as it was.
func (c *Config) SaveRoots(roots []string) error {
	canon, err := CanonicalRoots(roots)
	if err != nil {
		return err
	}
	// A root must not take the policy file in: an agent could then propose
	// the rules that approve its own proposals.
	if err := checkPolicyOutsideRoots(c.PolicyFile, c.ConfigDir, canon); err != nil {
		return err
	}
	return c.setFileKey("allowedRoots", canon)
}

// PersistEnvOverrides writes into config.json the allowed roots and the
// workspace image that SLUICE_ALLOWED_ROOTS and SLUICE_WORKSPACE_IMAGE
// gave the app (c holds them validated), so that a sidecar started with
// any environment gets them too. It returns the keys it changed.
func (c *Config) PersistEnvOverrides() ([]string, error) {
	m, err := c.readFileMap()
	if err != nil {
		return nil, err
	}
	var changed []string
	set := func(key string, v any) error {
		want, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if old, ok := m[key]; ok && jsonEqual(old, want) {
			return nil
		}
		if err := c.setFileKey(key, v); err != nil {
			return err
		}
		changed = append(changed, key)
		return nil
	}
	// An empty SLUICE_ALLOWED_ROOTS overrides for this process only: it is
	// far more often an unset-by-accident variable than a wish to forget
	// every saved root.
	if v, ok := os.LookupEnv("SLUICE_ALLOWED_ROOTS"); ok && strings.TrimSpace(v) != "" {
		if err := set("allowedRoots", append([]string{}, c.AllowedRoots...)); err != nil {
			return changed, err
		}
	}
	if _, ok := os.LookupEnv("SLUICE_WORKSPACE_IMAGE"); ok && c.WorkspaceImage != "" {
		if err := set("workspaceImage", c.WorkspaceImage); err != nil {
			return changed, err
		}
	}
	return changed, nil
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// readFileMap reads config.json as an object of raw members; a missing
// file is an empty object.
func (c *Config) readFileMap() (map[string]json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	b, err := os.ReadFile(c.File())
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config: read %s: %w", c.File(), err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %s: %v (it was not changed)", ErrInvalid, c.File(), err)
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	return m, nil
}

// setFileKey sets one member of config.json (atomically, 0600), keeping
// the others' values as they were; a nil v removes the member. Nothing is
// written when the file does not parse.
func (c *Config) setFileKey(key string, v any) error {
	m, err := c.readFileMap()
	if err != nil {
		return err
	}
	if v == nil {
		delete(m, key)
	} else {
		raw, err := json.Marshal(v)
		if err != nil {
			return err
		}
		m[key] = raw
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := EnsurePrivateDir(c.ConfigDir); err != nil {
		return err
	}
	return WriteFileAtomic(c.File(), append(b, '\n'), 0o600)
}

// DefaultPolicyFile is where Sluice creates the policy file when the person
// makes a rule and none is configured.
func (c *Config) DefaultPolicyFile() string { return filepath.Join(c.ConfigDir, "policy.json") }

// SavePolicyFile records path as policyFile in config.json, keeping the
// file's other keys.
func (c *Config) SavePolicyFile(path string) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("%w: policyFile: %q is not an absolute path", ErrInvalid, path)
	}
	if err := checkPolicyOutsideRoots(path, c.ConfigDir, c.AllowedRoots); err != nil {
		return err
	}
	return c.setFileKey("policyFile", path)
}
