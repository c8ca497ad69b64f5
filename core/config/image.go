package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// SaveWorkspaceImage pins the workspace image by its ID in config.json,
// where the app and every sidecar an agent starts find it (an environment
// variable reaches only the processes started with it). Every other key of
// the file is kept as it is. Nothing is written when id is not an image ID
// or the file does not parse.
func (c *Config) SaveWorkspaceImage(id string) error {
	if !workspaceImageRe.MatchString(id) {
		return fmt.Errorf("%w: workspaceImage: %q is not an image ID (sha256:<64 hex digits>)", ErrInvalid, id)
	}
	path := filepath.Join(c.ConfigDir, "config.json")
	keys := map[string]json.RawMessage{}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("config: read %s: %w", path, err)
	default:
		dec := json.NewDecoder(bytes.NewReader(b))
		if err := dec.Decode(&keys); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
		}
		if dec.Decode(new(json.RawMessage)) != io.EOF {
			return fmt.Errorf("%w: %s: trailing data after the JSON object", ErrInvalid, path)
		}
		if keys == nil {
			keys = map[string]json.RawMessage{}
		}
	}
	v, _ := json.Marshal(id)
	keys["workspaceImage"] = v
	out, err := json.MarshalIndent(keys, "", "  ")
	if err != nil {
		return err
	}
	if err := EnsurePrivateDir(c.ConfigDir); err != nil {
		return err
	}
	if err := WriteFileAtomic(path, append(out, '\n'), 0o600); err != nil {
		return err
	}
	c.WorkspaceImage = id
	return nil
}

// WorkspaceImageFromEnv reports whether SLUICE_WORKSPACE_IMAGE overrides
// the image pinned in config.json for this process.
func WorkspaceImageFromEnv() bool {
	_, ok := os.LookupEnv("SLUICE_WORKSPACE_IMAGE")
	return ok
}

// SaveWorkspaceRuntime sets workspaceRuntime in config.json ("" removes
// it: the Engine's default runtime), keeping every other key as it is.
// Nothing is written when name is not a runtime name or the file does not
// parse. Whether the Engine has that runtime is the caller's check (this
// package knows no Engine).
func (c *Config) SaveWorkspaceRuntime(name string) error {
	if name != "" && !workspaceRuntimeRe.MatchString(name) {
		return fmt.Errorf("%w: workspaceRuntime: %q is not a runtime name (for gVisor: runsc)", ErrInvalid, name)
	}
	path := filepath.Join(c.ConfigDir, "config.json")
	keys, err := readConfigKeys(path)
	if err != nil {
		return err
	}
	if name == "" {
		delete(keys, "workspaceRuntime")
	} else {
		v, _ := json.Marshal(name)
		keys["workspaceRuntime"] = v
	}
	out, err := json.MarshalIndent(keys, "", "  ")
	if err != nil {
		return err
	}
	if err := EnsurePrivateDir(c.ConfigDir); err != nil {
		return err
	}
	if err := WriteFileAtomic(path, append(out, '\n'), 0o600); err != nil {
		return err
	}
	c.WorkspaceRuntime = name
	return nil
}

// readConfigKeys reads config.json as raw keys ({} when it is absent).
func readConfigKeys(path string) (map[string]json.RawMessage, error) {
	keys := map[string]json.RawMessage{}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return keys, nil
	case err != nil:
		return nil, fmt.Errorf("config: read %s: %w", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&keys); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
	}
	if dec.Decode(new(json.RawMessage)) != io.EOF {
		return nil, fmt.Errorf("%w: %s: trailing data after the JSON object", ErrInvalid, path)
	}
	if keys == nil {
		keys = map[string]json.RawMessage{}
	}
	return keys, nil
}

// WorkspaceRuntimeFromEnv reports whether SLUICE_WORKSPACE_RUNTIME
// overrides the runtime in config.json for this process.
func WorkspaceRuntimeFromEnv() bool {
	_, ok := os.LookupEnv("SLUICE_WORKSPACE_RUNTIME")
	return ok
}

// CheckWorkspaceRuntime validates a runtime name as Load would ("" is the
// Engine's default), without writing anything.
func (c *Config) CheckWorkspaceRuntime(name string) error {
	if name != "" && !workspaceRuntimeRe.MatchString(name) {
		return fmt.Errorf("%w: workspaceRuntime: %q is not a runtime name (for gVisor: runsc)", ErrInvalid, name)
	}
	return nil
}
