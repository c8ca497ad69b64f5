package sidecar

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/sluicehq/sluice/core/config"
)

// ServingBinary is the name of the binary that serves MCP over stdio and
// nothing else (sidecar/cmd/sluice-sidecar-stdio), installed beside
// sluice-sidecar; on Linux sluice-sidecar becomes it to serve stdio
// (serve_exec_linux.go).
const ServingBinary = "sluice-sidecar-stdio"

// handoffEnv is set by sluice-sidecar when it execs the serving binary, to
// the build it is and its own path ("IDENTITY:PATH"), and by a serving
// binary that refuses the hand-off, to handoffRefused, when it execs
// sluice-sidecar back. Each side removes it from its environment before it
// starts anything.
const (
	handoffEnv     = "SLUICE_SIDECAR_HANDOFF"
	handoffRefused = "refused"
)

// buildID is stamped by `make build` into both binaries of one build (-X
// github.com/sluicehq/sluice/sidecar.buildID=…), a random value drawn once
// per build, so that no two builds share it: not two builds of one commit
// with different edits, nor builds where go build recorded no commit
// (-buildvcs=false, `go install …@version`). Empty in a build that did not
// stamp it.
var buildID string

// buildIdentity names the build this binary comes from: its stamped
// version and build ID. It is empty when the build stamped no ID: such a
// binary cannot tell a serving binary of its own build from another, so
// it hands nothing off and accepts nothing.
func buildIdentity() string {
	if buildID == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(config.Version + "\n" + buildID))
	return hex.EncodeToString(sum[:8])
}
