//go:build !linux

package kube

import (
	"context"
	"os"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace"
)

// applyHome carries a pod's HOME back on Unix only.
func applyHome(context.Context, string, map[string]homeRecord, *workspace.TreeManifest, *homeDelta, *os.Root, func(string, string)) (int, int, error) {
	return 0, 0, errcode.New(errcode.Unsupported, "a session pod's HOME is carried back on Linux only")
}
