//go:build linux

package workspace

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkTreeReadBack reads a pod's tree back after 10 files changed,
// at 1,000 and 20,000 files, three ways in turn within each iteration:
// `sluice-sidecar pod-tree` into SyncTreeDelta (what changed), and a
// whole-tree tar (busybox's, as in the pod, and GNU's) into SyncTree. The
// pod's tar or pod-tree runs here as a local process: the exec stream to
// a real pod adds the same transport to each.
func BenchmarkTreeReadBack(b *testing.B) {
	bin := tdBinary(b)
	for _, n := range []int{1000, 20000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			pod := filepath.Join(b.TempDir(), "pod")
			for i := 0; i < n; i++ {
				taWrite(b, filepath.Join(pod, fmt.Sprintf("d%03d", i/100), fmt.Sprintf("f%05d.txt", i)), fmt.Sprintf("file %d\n%s", i, make([]byte, 200)), 0o644)
			}
			taWrite(b, filepath.Join(pod, ".git", "HEAD"), "ref: refs/heads/main\n", 0o644)
			hosts := map[string]string{}
			for _, k := range []string{"delta", "busybox", "gnu"} {
				hosts[k] = filepath.Join(b.TempDir(), "tree")
				if err := os.MkdirAll(filepath.Join(hosts[k], ".git"), 0o755); err != nil {
					b.Fatal(err)
				}
			}
			var prev []byte
			delta := func() int {
				cmd := exec.Command(bin, "pod-tree", "--root", pod)
				cmd.Stdin = bytes.NewReader(prev)
				out, err := cmd.StdoutPipe()
				if err != nil {
					b.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				next, st, err := SyncTreeDelta(bufio.NewReaderSize(out, 1<<16), hosts["delta"], prev, taKeepOwner)
				_, _ = io.Copy(io.Discard, out)
				if werr := cmd.Wait(); err != nil || werr != nil {
					b.Fatalf("delta: %v, pod-tree: %v", err, werr)
				}
				prev = next
				return int(st.Archive.Files)
			}
			full := func(host string, tarCmd ...string) {
				names, err := os.ReadDir(pod)
				if err != nil {
					b.Fatal(err)
				}
				args := append([]string{}, tarCmd[1:]...)
				for _, e := range names {
					if e.Name() != ".git" {
						args = append(args, "./"+e.Name())
					}
				}
				cmd := exec.Command(tarCmd[0], args...)
				cmd.Dir = pod
				out, err := cmd.StdoutPipe()
				if err != nil {
					b.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				_, err = SyncTree(bufio.NewReaderSize(out, 1<<16), host, taKeepOwner)
				_, _ = io.Copy(io.Discard, out)
				if werr := cmd.Wait(); err != nil || werr != nil {
					b.Fatalf("full: %v, tar: %v", err, werr)
				}
			}
			// The first read carries everything, either way.
			delta()
			full(hosts["busybox"], "busybox", "tar", "-c", "-f", "-")
			full(hosts["gnu"], "tar", "-c", "-f", "-")
			round := 0
			change := func() {
				round++
				for i := 0; i < 10; i++ {
					k := (i*n/10 + round) % n
					taWrite(b, filepath.Join(pod, fmt.Sprintf("d%03d", k/100), fmt.Sprintf("f%05d.txt", k)), fmt.Sprintf("changed in round %d\n", round), 0o644)
				}
				// Past the racy margin, so that the delta carries the 10
				// changed files and not also the previous round's.
				tdSettle(b, pod)
			}
			var dDelta, dBusybox, dGNU time.Duration
			sent := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				change()
				b.StartTimer()
				// The three read the same 10 changes, in turn, each into
				// its own host tree.
				t0 := time.Now()
				sent = delta()
				dDelta += time.Since(t0)
				t0 = time.Now()
				full(hosts["busybox"], "busybox", "tar", "-c", "-f", "-")
				dBusybox += time.Since(t0)
				t0 = time.Now()
				full(hosts["gnu"], "tar", "-c", "-f", "-")
				dGNU += time.Since(t0)
			}
			b.StopTimer()
			delta()
			full(hosts["busybox"], "busybox", "tar", "-c", "-f", "-")
			full(hosts["gnu"], "tar", "-c", "-f", "-")
			for k, h := range hosts {
				taSameState(b, k+" against the pod", tsWithoutGit(taState(b, h)), tsWithoutGit(taState(b, pod)))
			}
			b.ReportMetric(float64(dDelta.Microseconds())/1e3/float64(b.N), "delta-ms")
			b.ReportMetric(float64(dBusybox.Microseconds())/1e3/float64(b.N), "busybox-full-ms")
			b.ReportMetric(float64(dGNU.Microseconds())/1e3/float64(b.N), "gnu-full-ms")
			b.ReportMetric(float64(sent), "delta-files")
			b.ReportMetric(0, "ns/op")
		})
	}
}
