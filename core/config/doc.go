// Package config owns where Sluice keeps its state and how it is configured:
// XDG paths, the config file, and environment overrides, resolved in the
// order env > file > defaults and validated once at load. A bad value fails
// the load with a message naming the key.
package config
