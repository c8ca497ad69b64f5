//go:build linux

package dockerrt

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
)

// TestRemove_TriesAgainAfterAFailedRemoval: the Engine fails a removal
// whose files it cannot delete and leaves the container Dead (as it does
// when a removal races a late exit on a loaded machine); Remove tries
// again and the container goes once the files can go. The failure is made
// real with an immutable file in the container's directory.
func TestRemove_TriesAgainAfterAFailedRemoval(t *testing.T) {
	d := needDocker(t)
	img := needImage(t, d)
	ctx := context.Background()
	info, err := d.cli.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	created, err := d.cli.ContainerCreate(ctx, &container.Config{Image: img, Cmd: []string{"true"}}, &container.HostConfig{}, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = d.cli.ContainerRemove(context.Background(), created.ID, container.RemoveOptions{Force: true})
	})
	pin := filepath.Join(info.DockerRootDir, "containers", created.ID, "pin")
	if err := os.WriteFile(pin, nil, 0o600); err != nil {
		t.Skipf("the Engine's container directory is not this process's to write (%v)", err)
	}
	if out, err := exec.Command("chattr", "+i", pin).CombinedOutput(); err != nil {
		os.Remove(pin)
		t.Skipf("no immutable files here: %v %s", err, out)
	}
	unpin := func() {
		_ = exec.Command("chattr", "-i", pin).Run()
		_ = os.Remove(pin)
	}
	t.Cleanup(unpin)

	done := make(chan error, 1)
	go func() { done <- d.Remove(ctx, created.ID) }()
	// The first removal fails and leaves the container Dead.
	for {
		c, err := d.cli.ContainerInspect(ctx, created.ID)
		if err != nil {
			t.Fatalf("inspect while its removal fails: %v", err)
		}
		if c.State != nil && c.State.Dead {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("Remove returned %v while the container's files could not go", err)
		case <-time.After(20 * time.Millisecond): // a pause between reads, not a deadline
		}
	}
	unpin()
	if err := <-done; err != nil {
		t.Fatalf("Remove after a failed removal: %v", err)
	}
	if _, err := d.cli.ContainerInspect(ctx, created.ID); !cerrdefs.IsNotFound(err) {
		t.Fatalf("the container is still there: %v", err)
	}
}
