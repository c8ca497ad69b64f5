package sidecar

import (
	"crypto/sha256"
	"encoding/hex"
	"runtime/debug"

	"github.com/sluicehq/sluice/core/config"
)

// handoffEnv is set by sluice-sidecar when it execs the serving binary, to
// the build it is and its own path ("IDENTITY:PATH"), and by a serving
// binary that refuses the hand-off, to handoffRefused, when it execs
// sluice-sidecar back. Each side removes it from its environment before it
// starts anything.
const (
	handoffEnv     = "SLUICE_SIDECAR_HANDOFF"
	handoffRefused = "refused"
)

// buildIdentity names the build this binary comes from: the version
// stamped at build time and what go build recorded of the source (the
// commit, its time, whether the tree was modified). `make build` builds
// both binaries from one tree with one stamp, so they agree.
func buildIdentity() string {
	id := config.Version
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision", "vcs.time", "vcs.modified":
				id += "\n" + s.Key + "=" + s.Value
			}
		}
	}
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:8])
}
