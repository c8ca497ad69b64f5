//go:build unix

package workspace

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Benchmarks. Run them with:
//
//	go test -run '^$' -bench 'Run_Trivial|DockerCLIRunRm|Create_Repo20k|Seal_Repo20k|GitClone20k' -benchtime 20x ./core/workspace/
//
// Targets: a Sluice run beats `docker run --rm` with the same hardening,
// under runc and under runsc;
// creating a workspace from a 20,000-file repository costs at most 1.3×
// a plain `git clone` of it.

// BenchmarkRun_Trivial is one hardened run of `true`: create, attach,
// start, wait, inspect, remove and verify removal; under the Engine's
// default runtime (runc) and under gVisor (runsc).
func BenchmarkRun_Trivial(b *testing.B) {
	for _, rt := range []string{"runc", "runsc"} {
		b.Run(rt, func(b *testing.B) {
			needBenchRuntime(b, rt)
			m := newManager(b, true, func(o *Options) { o.RuntimeName = rt })
			w, err := m.Create(context.Background(), CreateRequest{Source: Source{Kind: SourceFresh}})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := m.Run(ctx, w.ID, RunRequest{Argv: []string{"true"}})
				if err != nil || res.ExitCode != 0 || res.OCIRuntime != rt {
					b.Fatalf("run: %+v %v", res, err)
				}
			}
		})
	}
}

// needBenchRuntime skips a runtime the Engine lacks (fails with
// SLUICE_REQUIRE_E2E=1).
func needBenchRuntime(b *testing.B, rt string) {
	if _, err := needDocker(b).CheckRuntime(context.Background(), rt); err != nil {
		if os.Getenv("SLUICE_REQUIRE_E2E") == "1" {
			b.Fatal(err)
		}
		b.Skip(err)
	}
}

// BenchmarkDockerCLIRunRm is the same container started the usual way:
// the docker CLI with the same hardening flags and --rm, under each
// runtime.
func BenchmarkDockerCLIRunRm(b *testing.B) {
	for _, rt := range []string{"runc", "runsc"} {
		b.Run(rt, func(b *testing.B) {
			needBenchRuntime(b, rt)
			m := newManager(b, true)
			w, err := m.Create(context.Background(), CreateRequest{Source: Source{Kind: SourceFresh}})
			if err != nil {
				b.Fatal(err)
			}
			docker, err := exec.LookPath("docker")
			if err != nil {
				b.Skip("the docker CLI is not installed")
			}
			args := []string{"run", "--rm", "--runtime", rt, "--network", "none", "--read-only", "--cap-drop", "ALL",
				"--security-opt", "no-new-privileges", "--user", m.ContainerUser(), "--memory", "256m", "--memory-swap", "256m",
				"--pids-limit", "128", "--cpus", "1", "--log-driver", "none", "--tmpfs", "/tmp:size=64m",
				"--mount", "type=bind,source=" + m.treeDir(w.ID) + ",target=/workspace", "-w", "/workspace",
				m.opts.Image, "true"}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if out, err := exec.Command(docker, args...).CombinedOutput(); err != nil {
					b.Fatalf("docker run: %v: %s", err, out)
				}
			}
		})
	}
}

const benchFiles = 20_000

// repo20k returns a repository with 20,000 files in one commit, made with
// git fast-import and kept in the system temp directory between runs.
func repo20k(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), "sluice-bench-repo20k")
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err == nil {
		return dir
	}
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	git(b, dir, "init", "-q")
	var stream bytes.Buffer
	stream.WriteString("commit refs/heads/main\ncommitter Bench <bench@example.invalid> 1700000000 +0000\ndata 6\nfiles\n")
	for i := 0; i < benchFiles; i++ {
		content := strings.Repeat(fmt.Sprintf("line %d of file %d\n", i%7, i), 1+i%20)
		fmt.Fprintf(&stream, "M 100644 inline pkg%03d/sub%d/file%05d.go\ndata %d\n%s\n", i/100, i%4, i, len(content), content)
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir = dir
	cmd.Env = gitEnv(dir)
	cmd.Stdin = &stream
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("fast-import: %v: %s", err, out)
	}
	git(b, dir, "symbolic-ref", "HEAD", "refs/heads/main")
	if err := os.WriteFile(filepath.Join(dir, ".complete"), nil, 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkCreate_Repo20k is workspace_create from the 20k-file
// repository: resolve the commit, fetch exactly its objects, check it out
// and hand the tree to the container user.
func BenchmarkCreate_Repo20k(b *testing.B) {
	src := repo20k(b)
	m := newManager(b, false)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w, err := m.Create(ctx, CreateRequest{Source: Source{Kind: SourceRepo, Path: src}})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if _, err := m.Destroy(ctx, w.ID); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkSeal_Repo20k is workspace_seal of a one-file change in a
// workspace of the 20k-file repository: commit what is left (git add -A
// over the whole tree), run the handoff checks, close the workspace.
// Creating and editing the workspace is not timed.
func BenchmarkSeal_Repo20k(b *testing.B) {
	src := repo20k(b)
	m := newManager(b, false)
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		w, err := m.Create(ctx, CreateRequest{Source: Source{Kind: SourceRepo, Path: src}})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.WriteFile(ctx, w.ID, "pkg000/sub0/file00000.go", []byte("changed\n"), 0); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res, err := m.Seal(ctx, w.ID, "bench")
		if err != nil || res.Refused || !res.Changed {
			b.Fatalf("seal: %+v %v", res, err)
		}
		b.StopTimer()
		if _, err := m.Destroy(ctx, w.ID); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkGitClone20k is a plain `git clone` of the same repository (a
// local clone: objects hard-linked, then a checkout).
func BenchmarkGitClone20k(b *testing.B) {
	benchClone(b)
}

// BenchmarkGitClone20kNoLocal is `git clone --no-local`: objects copied
// through the pack protocol, the same isolation a workspace needs.
func BenchmarkGitClone20kNoLocal(b *testing.B) {
	benchClone(b, "--no-local")
}

func benchClone(b *testing.B, opts ...string) {
	src := repo20k(b)
	base := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dst := filepath.Join(base, fmt.Sprint(i))
		cmd := exec.Command("git", append(append([]string{"clone", "-q"}, opts...), src, dst)...)
		cmd.Env = gitEnv(base)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git clone: %v: %s", err, out)
		}
		b.StopTimer()
		os.RemoveAll(dst)
		b.StartTimer()
	}
}
