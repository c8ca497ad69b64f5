//go:build unix

package workspace_test

import (
	"context"

	"github.com/docker/docker/client"

	"github.com/sluicehq/sluice/core/workspace"
	"github.com/sluicehq/sluice/core/workspace/dockerrt"
)

// The Docker runtime for this package's internal tests (see TestEngine):
// an external test file may import dockerrt, which imports workspace.
func init() {
	workspace.NewTestEngine = func(ctx context.Context) (workspace.TestEngine, error) {
		d, err := dockerrt.New(ctx)
		if err != nil {
			return nil, err
		}
		return d, nil
	}
	workspace.TestEngineWithClient = func(cli *client.Client) workspace.TestEngine { return dockerrt.NewWithClient(cli) }
}
