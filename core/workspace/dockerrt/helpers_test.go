//go:build unix

package dockerrt

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace/workspacetest"
)

var (
	dockerOnce sync.Once
	dockerRT   *Docker
	dockerErr  error
	imageOnce  sync.Once
	imageID    string
	imageErr   error
)

// needDocker returns the shared Docker runtime, skipping the test when the
// Engine is unreachable unless SLUICE_REQUIRE_E2E=1 demands it.
func needDocker(t testing.TB) *Docker {
	t.Helper()
	dockerOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		dockerRT, dockerErr = New(ctx)
	})
	if dockerErr != nil {
		if os.Getenv("SLUICE_REQUIRE_E2E") == "1" {
			t.Fatalf("Docker Engine required (SLUICE_REQUIRE_E2E=1) but unreachable: %v (%v)", dockerErr, dockerErr.(*errcode.Error).Err)
		}
		t.Skipf("Docker Engine unreachable: %v", dockerErr)
	}
	return dockerRT
}

// needImage imports the test image once (if it is not present yet) and
// returns its ID.
func needImage(t testing.TB, d *Docker) string {
	t.Helper()
	imageOnce.Do(func() { imageID, imageErr = workspacetest.EnsureImage(context.Background(), d.Client()) })
	if imageErr != nil {
		t.Fatalf("test image: %v", imageErr)
	}
	return imageID
}

// testRuntime is the OCI runtime the Docker tests run under: the Engine's
// default unless SLUICE_TEST_WORKSPACE_RUNTIME names another.
var testRuntime = os.Getenv("SLUICE_TEST_WORKSPACE_RUNTIME")
