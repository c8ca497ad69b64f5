//go:build unix

package dockerrt

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace/workspacetest"
)

// needRegistry starts a real registry on 127.0.0.1 for one test.
func needRegistry(t *testing.T) *workspacetest.Registry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := workspacetest.StartRegistry(ctx, t.TempDir())
	if errors.Is(err, workspacetest.ErrNoRegistryBinary) && os.Getenv("SLUICE_REQUIRE_E2E") != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatalf("registry: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestImage_ResolveAndList(t *testing.T) {
	t.Parallel()
	d := needDocker(t)
	id := needImage(t, d)
	ctx := context.Background()
	for _, name := range []string{workspacetest.ImageRef, id} {
		im, err := d.ResolveImage(ctx, name)
		if err != nil || im.ID != id {
			t.Fatalf("ResolveImage(%q) = %+v, %v; want %s", name, im, err, id)
		}
	}
	for _, bad := range []string{"", "-rm", "Upper/Case", "a b", "sluice-test/no-such-image:1"} {
		if _, err := d.ResolveImage(ctx, bad); !errcode.IsCode(err, errcode.InvalidArgument) {
			t.Errorf("ResolveImage(%q): %v, want invalid_argument", bad, err)
		}
	}
	list, err := d.ListImages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, im := range list {
		if im.ID == id && strings.Contains(strings.Join(im.Tags, " "), workspacetest.ImageRef) {
			found = true
		}
	}
	if !found {
		t.Fatalf("ListImages does not show %s (%s): %+v", workspacetest.ImageRef, id, list)
	}
}

// TestImage_PullByDigestFromARealRegistry pushes a locally built image to
// a registry on 127.0.0.1, removes it locally, pulls it back by digest and
// finds the same image ID. A tag, a wrong digest and a malformed one are
// refused.
func TestImage_PullByDigestFromARealRegistry(t *testing.T) {
	t.Parallel()
	d := needDocker(t)
	reg := needRegistry(t)
	ctx := context.Background()
	id, digest, err := reg.PushImage(ctx, d.Client(), "sluice-test/pull:1", true)
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	if _, err := d.Client().ImageInspect(ctx, id); err == nil {
		t.Fatalf("the image is still present locally; the pull would prove nothing")
	}
	repo := reg.Addr + "/sluice-test/pull"
	t.Cleanup(func() {
		d.Client().ImageRemove(context.Background(), id, image.RemoveOptions{Force: true, PruneChildren: true})
	})

	if _, err := d.PullImage(ctx, repo+":1", nil); !errors.Is(err, ErrDigestRequired) {
		t.Fatalf("pull by tag: %v, want ErrDigestRequired", err)
	}
	if _, err := d.PullImage(ctx, repo+":1@"+digest, nil); !errcode.IsCode(err, errcode.InvalidArgument) {
		t.Fatalf("pull by tag and digest: %v", err)
	}
	if _, err := d.PullImage(ctx, repo+"@sha256:1234", nil); !errcode.IsCode(err, errcode.InvalidArgument) {
		t.Fatalf("pull by a malformed digest: %v", err)
	}
	wrong := "sha256:" + strings.Repeat("ab", 32)
	if _, err := d.PullImage(ctx, repo+"@"+wrong, nil); err == nil || !strings.Contains(err.Error(), "registry") {
		t.Fatalf("pull by a digest the registry does not have: %v", err)
	} else {
		t.Logf("a wrong digest: %v", err)
	}
	if _, err := d.Client().ImageInspect(ctx, id); err == nil {
		t.Fatalf("the failed pulls left the image present")
	}

	var progress strings.Builder
	im, err := d.PullImage(ctx, repo+"@"+digest, &progress)
	if err != nil {
		t.Fatalf("pull by digest: %v", err)
	}
	if im.ID != id || !strings.Contains(strings.Join(im.Digests, " "), repo+"@"+digest) {
		t.Fatalf("pulled %+v, want ID %s with digest %s", im, id, digest)
	}
	if !strings.Contains(progress.String(), digest) {
		t.Errorf("the pull's progress does not name the digest: %q", progress.String())
	}
	t.Logf("pulled %s@%s: image %s", repo, digest, im.ID)
}
