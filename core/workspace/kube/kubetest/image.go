package kubetest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/distribution/reference"
	"github.com/docker/docker/client"
)

// importMu serializes this binary's imports; a file lock under the
// cluster's base serializes those of the test binaries beside it.
var importMu sync.Mutex

// ImportImage copies the Docker Engine's image dockerRef into the node's
// containerd (docker save, then ctr images import into the k8s.io
// namespace, where the kubelet looks) and returns it pinned by digest,
// "name@sha256:…", for a pod with imagePullPolicy Never or IfNotPresent.
// The digest is that of the image's manifest as containerd stores it. An
// image already imported (by its Docker image ID) is not copied again.
func (c *Cluster) ImportImage(t testing.TB, dockerRef string) string {
	t.Helper()
	if err := pingDocker(); err != nil {
		unavailable(t, "kubetest: ImportImage needs the Docker Engine: "+err.Error())
	}
	ref, err := c.importImage(t.TempDir(), dockerRef)
	if err != nil {
		t.Fatalf("kubetest: importing %s into the cluster: %v", dockerRef, err)
	}
	return ref
}

func (c *Cluster) importImage(tmp, dockerRef string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	named, err := reference.ParseNormalizedNamed(dockerRef)
	if err != nil {
		return "", err
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return "", err
	}
	defer cli.Close()
	ins, err := cli.ImageInspect(ctx, dockerRef)
	if err != nil {
		return "", err
	}
	// containerd names an imported image by its reference in the archive,
	// which is dockerRef as the Engine knows it (normalized, tag or not).
	name := reference.TagNameOnly(named).String()

	importMu.Lock()
	defer importMu.Unlock()
	dir := filepath.Join(c.Base, "images", "imported")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)

	// Keyed by image ID and name: the same image under another tag is
	// another containerd image.
	key := filepath.Join(dir, strings.TrimPrefix(ins.ID, "sha256:")+"-"+strings.NewReplacer("/", "_", ":", "_").Replace(name))
	if b, err := os.ReadFile(key); err == nil {
		if ref := strings.TrimSpace(string(b)); ref != "" {
			if _, err := c.containerdDigest(ctx, ref); err == nil {
				return ref, nil
			}
		}
	}

	archive := filepath.Join(tmp, "image.tar")
	if err := saveImage(ctx, cli, dockerRef, archive); err != nil {
		return "", err
	}
	if out, err := c.ctr(ctx, "images", "import", archive); err != nil {
		return "", fmt.Errorf("ctr images import: %v: %s", err, out)
	}
	digest, err := c.containerdDigest(ctx, name)
	if err != nil {
		return "", err
	}
	// The kubelet asks the CRI for the image by the pod's reference, and
	// containerd's CRI knows an image by a digest only under a name that
	// is that digest reference (a pull makes one; an import does not).
	ref := named.Name() + "@" + digest
	if out, err := c.ctr(ctx, "images", "tag", "--force", name, ref); err != nil {
		return "", fmt.Errorf("ctr images tag: %v: %s", err, out)
	}
	if err := os.WriteFile(key, []byte(ref+"\n"), 0o644); err != nil {
		return "", err
	}
	return ref, nil
}

func pingDocker() error {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = cli.Ping(ctx)
	return err
}

func saveImage(ctx context.Context, cli *client.Client, ref, path string) error {
	rc, err := cli.ImageSave(ctx, []string{ref})
	if err != nil {
		return err
	}
	defer rc.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, rc); err != nil {
		f.Close()
		return fmt.Errorf("docker save %s: %w", ref, err)
	}
	return f.Close()
}

// containerdDigest is the digest of the image name in the node's
// containerd (the DIGEST column of ctr images ls).
func (c *Cluster) containerdDigest(ctx context.Context, name string) (string, error) {
	out, err := c.ctr(ctx, "images", "ls", "name=="+name)
	if err != nil {
		return "", fmt.Errorf("ctr images ls: %v: %s", err, out)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 3 && f[0] == name && strings.HasPrefix(f[2], "sha256:") {
			return f[2], nil
		}
	}
	return "", fmt.Errorf("image %s is not in the node's containerd:\n%s", name, out)
}

func (c *Cluster) ctr(ctx context.Context, args ...string) ([]byte, error) {
	args = append([]string{"--address", c.containerd, "--namespace", "k8s.io"}, args...)
	return exec.CommandContext(ctx, c.ctrPath, args...).CombinedOutput()
}
