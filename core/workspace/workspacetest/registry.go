//go:build unix

package workspacetest

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// Registry is a real registry (Debian's docker-registry, the CNCF
// distribution) serving on 127.0.0.1 from a directory, for tests of pulls
// by digest.
type Registry struct {
	// Addr is host:port; the Engine treats 127.0.0.0/8 registries as
	// insecure (plain HTTP) without configuration.
	Addr string
	cmd  *exec.Cmd
}

// ErrNoRegistryBinary: docker-registry is not installed.
var ErrNoRegistryBinary = errors.New("docker-registry is not installed (apt install docker-registry)")

var listenRe = regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`)

// StartRegistry starts docker-registry on a free loopback port with
// its storage under dir, and waits until it says where it listens.
func StartRegistry(ctx context.Context, dir string) (*Registry, error) {
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		return nil, ErrNoRegistryBinary
	}
	conf := filepath.Join(dir, "config.yml")
	body := fmt.Sprintf("version: 0.1\nlog:\n  level: info\nstorage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:0\n", filepath.Join(dir, "data"))
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve", conf)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	found := make(chan string, 1)
	var logBuf bytes.Buffer
	go func() {
		sc := bufio.NewScanner(pr)
		sent := false
		for sc.Scan() {
			if !sent {
				logBuf.WriteString(sc.Text() + "\n")
				if m := listenRe.FindStringSubmatch(sc.Text()); m != nil {
					found <- m[1]
					sent = true
				}
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); pw.Close() }()
	select {
	case addr := <-found:
		return &Registry{Addr: addr, cmd: cmd}, nil
	case err := <-exited:
		return nil, fmt.Errorf("docker-registry exited: %v", err)
	case <-ctx.Done():
		cmd.Process.Kill()
		return nil, fmt.Errorf("docker-registry did not start: %w", ctx.Err())
	}
}

// Close stops the registry.
func (r *Registry) Close() error {
	if r.cmd.Process == nil {
		return nil
	}
	return r.cmd.Process.Kill()
}

// PushImage imports a tiny image with a unique marker file as
// r.Addr/NAME:TAG, pushes it and returns its image ID and the digest the
// registry gave it. With removeLocal, the local copy is removed after the
// push, so that a pull has to fetch it from the registry.
func (r *Registry) PushImage(ctx context.Context, cli *client.Client, name string, removeLocal bool) (id, digest string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	marker := []byte(fmt.Sprintf("sluice test image %s %d\n", name, time.Now().UnixNano()))
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "marker", Mode: 0o644, Size: int64(len(marker)), ModTime: time.Unix(0, 0)})
	tw.Write(marker)
	tw.Close()
	ref := r.Addr + "/" + name
	rc, err := cli.ImageImport(ctx, image.ImportSource{Source: &buf, SourceName: "-"}, ref, image.ImportOptions{})
	if err != nil {
		return "", "", err
	}
	io.Copy(io.Discard, rc)
	rc.Close()
	ins, err := cli.ImageInspect(ctx, ref)
	if err != nil {
		return "", "", err
	}
	auth := base64.URLEncoding.EncodeToString([]byte("{}"))
	rc, err = cli.ImagePush(ctx, ref, image.PushOptions{RegistryAuth: auth})
	if err != nil {
		return "", "", err
	}
	err = streamError(rc)
	rc.Close()
	if err != nil {
		return "", "", fmt.Errorf("push: %w", err)
	}
	after, err := cli.ImageInspect(ctx, ref)
	if err != nil {
		return "", "", err
	}
	repo := ref
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		repo = ref[:i]
	}
	for _, d := range after.RepoDigests {
		if r, dg, ok := strings.Cut(d, "@"); ok && r == repo {
			digest = dg
		}
	}
	if digest == "" {
		return "", "", fmt.Errorf("the push left no digest for %s: %v", repo, after.RepoDigests)
	}
	if removeLocal {
		if _, err := cli.ImageRemove(ctx, ins.ID, image.RemoveOptions{Force: true, PruneChildren: true}); err != nil {
			return "", "", err
		}
	}
	return ins.ID, digest, nil
}

// streamError reads the Engine's JSON message stream to its end and
// returns the first error it reports (a push that fails still answers
// 200, with the error in the stream).
func streamError(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var msg struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&msg); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if msg.Error != "" {
			return errors.New(msg.Error)
		}
	}
}
