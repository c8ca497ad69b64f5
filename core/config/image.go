package config

import (
	"fmt"
	"os"
)

// SaveWorkspaceImage pins the workspace image by its ID in config.json,
// where the app and every sidecar an agent starts find it (an environment
// variable reaches only the processes started with it). Every other key of
// the file is kept as it is. Nothing is written when id is not an image ID
// or the file does not parse.
func (c *Config) SaveWorkspaceImage(id string) error {
	if !workspaceImageRe().MatchString(id) {
		return fmt.Errorf("%w: workspaceImage: %q is not an image ID (sha256:<64 hex digits>)", ErrInvalid, id)
	}
	if err := c.setFileKey("workspaceImage", id); err != nil {
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
	if err := c.CheckWorkspaceRuntime(name); err != nil {
		return err
	}
	var v any // "" removes the key: the Engine's default runtime
	if name != "" {
		v = name
	}
	if err := c.setFileKey("workspaceRuntime", v); err != nil {
		return err
	}
	c.WorkspaceRuntime = name
	return nil
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
	if name != "" && !workspaceRuntimeRe().MatchString(name) {
		return fmt.Errorf("%w: workspaceRuntime: %q is not a runtime name (for gVisor: runsc)", ErrInvalid, name)
	}
	return nil
}
