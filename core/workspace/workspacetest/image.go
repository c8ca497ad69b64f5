//go:build unix

package workspacetest

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// ImageRef is the image tests run workspaces on: busybox (the host's
// static build) on an otherwise empty root file system, imported locally
// so that no registry has to be reachable.
const ImageRef = "sluice-test/busybox:1"

// EnsureImage imports ImageRef from the host's /bin/busybox unless it is
// present, and returns its image ID.
func EnsureImage(ctx context.Context, cli *client.Client) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if ins, err := cli.ImageInspect(ctx, ImageRef); err == nil {
		return ins.ID, nil
	} else if !cerrdefs.IsNotFound(err) {
		return "", err
	}
	rootfs, err := busyboxRootfs()
	if err != nil {
		return "", err
	}
	rc, err := cli.ImageImport(ctx, image.ImportSource{Source: rootfs, SourceName: "-"}, ImageRef, image.ImportOptions{})
	if err != nil {
		return "", err
	}
	io.Copy(io.Discard, rc)
	rc.Close()
	ins, err := cli.ImageInspect(ctx, ImageRef)
	if err != nil {
		return "", err
	}
	return ins.ID, nil
}

// busyboxRootfs is a tar of: /bin/busybox, one symlink per applet, /etc
// with root and nobody, and empty /tmp and /workspace.
func busyboxRootfs() (io.Reader, error) {
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		return nil, err
	}
	list, err := exec.Command("/bin/busybox", "--list").Output()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64) {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, ModTime: time.Unix(0, 0)})
	}
	file := func(name string, mode int64, data []byte) {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: time.Unix(0, 0)})
		tw.Write(data)
	}
	dir("bin", 0o755)
	dir("etc", 0o755)
	dir("tmp", 0o1777)
	dir("workspace", 0o755)
	file("bin/busybox", 0o755, bb)
	for _, a := range strings.Fields(string(list)) {
		if a == "busybox" {
			continue
		}
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + a, Linkname: "busybox", Mode: 0o777, ModTime: time.Unix(0, 0)})
	}
	file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"))
	file("etc/group", 0o644, []byte("root:x:0:\nnogroup:x:65534:\n"))
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return &buf, nil
}
