//go:build unix

package intake

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/apply"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// sealEnv is a real gateway whose backend seals with a real executor, over
// a real repository.
type sealEnv struct {
	j      *journal.Journal
	e      *apply.Executor
	b      *Intake
	client *gateway.Client
	root   string
	repo   *gitxtest.Repo
	db     string
}

func openSealBackend(t testing.TB, root, db string, onStep func(string)) (*journal.Journal, *apply.Executor, *Intake) {
	t.Helper()
	j, err := journal.Open(db, journal.Options{Recorder: &memRecorder{}, LockTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	runner, err := gitx.NewRunner(gitx.RunnerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	e, err := apply.New(apply.Options{Journal: j, Roots: gitx.Roots{root}, Runner: runner, Logger: quiet, OnStep: onStep})
	if err != nil {
		t.Fatal(err)
	}
	return j, e, New(j, Options{Roots: gitx.Roots{root}, Logger: quiet, Sealer: e})
}

func newSealEnv(t testing.TB) *sealEnv {
	t.Helper()
	root, r := baseRepo(t)
	db := filepath.Join(t.TempDir(), "journal.db")
	j, e, b := openSealBackend(t, root, db, nil)
	_, client, _ := serve(t, b, j, db)
	return &sealEnv{j: j, e: e, b: b, client: client, root: root, repo: r, db: db}
}

// proposal is args pinned as the sidecar pins them, digest included.
// baseRepo is a repository with a.txt committed, in a directory of its
// own (symlinks resolved) that the tests allow as the root.
func baseRepo(t testing.TB) (root string, r *gitxtest.Repo) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r = gitxtest.InitAt(t, filepath.Join(root, "repo"))
	r.WriteCommit("a.txt", "one\n", "base")
	return root, r
}

func sealedProposal(t testing.TB, dir string, args proposal.Args) proposal.Proposal {
	t.Helper()
	now := time.Now()
	p := proposal.Proposal{
		ID: fmt.Sprintf("seal-%d-%d", os.Getpid(), idSeq.Add(1)), Op: args.Op(), Repo: dir, Args: args,
		Reason: "test", Agent: "agent-a", Pinned: proposal.Pinned{Refs: map[string]string{}},
		CreatedAt: proposal.At(now), ExpiresAt: proposal.At(now.Add(10 * time.Minute)),
	}
	for _, ref := range args.Pins() {
		p.Pinned.Refs[ref] = gitxtest.Git(t, dir, "rev-parse", "--verify", ref+"^{commit}")
	}
	if err := p.Seal(); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSeal_Submit_OutcomeSealedAndCovered: a submitted commit comes back
// with the digest of the proposal with its sealed outcome; the stored
// proposal holds the tree, and its objects are kept under its ref.
func TestSeal_Submit_OutcomeSealedAndCovered(t *testing.T) {
	s := newSealEnv(t)
	s.repo.Write("a.txt", "two\n")
	p := sealedProposal(t, s.repo.Dir, &proposal.CommitArgs{Message: "m", Paths: []string{"a.txt"}})
	st, err := s.client.SubmitProposal(context.Background(), "agent-a", p)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := s.j.Get(p.ID)
	if err != nil {
		t.Fatal(err)
	}
	sealed := rec.Proposal.Sealed
	if sealed == nil || sealed.After == "" || len(sealed.Files) != 1 {
		t.Fatalf("stored outcome %+v", sealed)
	}
	if st.Digest != rec.Proposal.Digest || st.Digest == p.Digest {
		t.Errorf("digest %s, stored %s, as sent %s: the answer must carry the digest over the outcome", st.Digest, rec.Proposal.Digest, p.Digest)
	}
	// The digest covers the outcome: another tree is another digest.
	other := rec.Proposal
	o := *other.Sealed
	o.After = strings.Repeat("0", 40)
	other.Sealed = &o
	if err := other.VerifyDigest(); !errors.Is(err, proposal.ErrDigestMismatch) {
		t.Errorf("a changed outcome verified: %v", err)
	}
	if got := s.repo.Git("ls-tree", proposal.SealedRef(p.ID)); !strings.Contains(got, sealed.After) {
		t.Errorf("the sealed ref holds %q", got)
	}
}

// TestSeal_Submit_RefusalsReachTheAgent: an outcome that cannot be
// produced is refused at once with the executor's code and data; nothing
// is stored and no ref is left.
func TestSeal_Submit_RefusalsReachTheAgent(t *testing.T) {
	s := newSealEnv(t)
	s.repo.Git("checkout", "-q", "-b", "feature")
	s.repo.WriteCommit("a.txt", "feature\n", "feature")
	s.repo.Git("checkout", "-q", "main")
	s.repo.WriteCommit("a.txt", "main\n", "main")
	cases := []struct {
		args proposal.Args
		code errcode.Code
	}{
		{&proposal.MergeArgs{Source: "feature", Target: "main", Strategy: proposal.MergeCommit}, "merge_conflict"},
		{&proposal.CommitArgs{Message: "m", StageAll: true}, "nothing_to_commit"},
		{&proposal.PatchArgs{Target: proposal.PatchWorktree, Patch: "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-not there\n+x\n"}, "patch_does_not_apply"},
	}
	for _, c := range cases {
		p := sealedProposal(t, s.repo.Dir, c.args)
		_, err := s.client.SubmitProposal(context.Background(), "agent-a", p)
		var api *gateway.APIError
		if !errors.As(err, &api) || api.Detail.Code != c.code || api.Status != 422 {
			t.Errorf("%s: %v, want 422 %s", c.args.Op(), err, c.code)
			continue
		}
		if c.code == "merge_conflict" && !strings.Contains(fmt.Sprint(api.Detail.Data), "a.txt") {
			t.Errorf("merge_conflict data %v does not name the file", api.Detail.Data)
		}
		if _, err := s.j.Get(p.ID); !errors.Is(err, journal.ErrNotFound) {
			t.Errorf("%s: a refused proposal was stored: %v", c.args.Op(), err)
		}
	}
	if refs := s.repo.Git("for-each-ref", proposal.SealedRefPrefix); refs != "" {
		t.Errorf("refused proposals left refs: %q", refs)
	}
	// An agent cannot bring its own outcome.
	p := sealedProposal(t, s.repo.Dir, &proposal.BranchArgs{Name: "x", StartPoint: "main"})
	p.Sealed = &proposal.Sealed{After: strings.Repeat("1", 40)}
	if err := p.Seal(); err != nil {
		t.Fatal(err)
	}
	var api *gateway.APIError
	if _, err := s.client.SubmitProposal(context.Background(), "agent-a", p); !errors.As(err, &api) || api.Status != 400 {
		t.Errorf("an agent-sealed proposal: %v, want 400", err)
	}
}

const sealCrashEnv = "SLUICE_GATEWAY_SEAL_CRASH"

// TestHelperProcess_Seal is not a test: the crash test runs the test
// binary again with sealCrashEnv set, and this submits one proposal
// through a sealing backend. At the step named by CRASH_STEP it prints
// "AT <step>" and waits to be killed.
func TestHelperProcess_Seal(t *testing.T) {
	if os.Getenv(sealCrashEnv) != "1" {
		t.Skip("helper for TestSeal_SIGKILL_WhileSealing")
	}
	at := os.Getenv("CRASH_STEP")
	_, _, b := openSealBackend(t, os.Getenv("CRASH_ROOT"), os.Getenv("CRASH_DB"), func(step string) {
		if step == at {
			os.Stdout.WriteString("AT " + step + "\n")
			time.Sleep(time.Hour)
		}
	})
	p := sealedProposal(t, os.Getenv("CRASH_REPO"), &proposal.CommitArgs{Message: "m", Paths: []string{"a.txt"}})
	p.ID = os.Getenv("CRASH_ID")
	if err := p.Seal(); err != nil {
		t.Fatal(err)
	}
	_, err := b.Submit(context.Background(), "agent-a", p)
	fmt.Printf("DONE %v\n", err)
	os.Exit(0)
}

// TestSeal_SIGKILL_WhileSealing kills a real sealing process with SIGKILL
// at each point of receipt. After the restart nothing half-sealed is a
// card: either there is no proposal and no ref, or the proposal is whole,
// its objects are kept (at start-up if the crash came first) and it lands
// the sealed content.
func TestSeal_SIGKILL_WhileSealing(t *testing.T) {
	for _, step := range []string{"seal-start", "seal-computed", "seal-keep", "seal-kept"} {
		t.Run(step, func(t *testing.T) {
			root, r := baseRepo(t)
			r.Write("a.txt", "two\n")
			status := r.Git("status", "--porcelain")
			db := filepath.Join(t.TempDir(), "journal.db")
			id := fmt.Sprintf("crash-%d", idSeq.Add(1))
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess_Seal$")
			cmd.Env = append(os.Environ(), sealCrashEnv+"=1", "CRASH_STEP="+step, "CRASH_ROOT="+root, "CRASH_DB="+db,
				"CRASH_REPO="+r.Dir, "CRASH_ID="+id)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(out)
			reached := false
			for sc.Scan() {
				line := sc.Text()
				if line == "AT "+step {
					reached = true
					break
				}
				if strings.HasPrefix(line, "DONE") {
					break
				}
			}
			if !reached {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("the helper never reached %s", step)
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()

			// The restart: the app keeps the objects of open proposals.
			j, e, b := openSealBackend(t, root, db, nil)
			defer j.Close()
			if err := b.KeepSealed(context.Background()); err != nil {
				t.Fatalf("keeping after the restart: %v", err)
			}
			if got := r.Git("status", "--porcelain"); got != status {
				t.Errorf("the working tree or index changed: %q, was %q", got, status)
			}
			rec, err := j.Get(id)
			refs := r.Git("for-each-ref", "--format=%(refname)", proposal.SealedRefPrefix)
			if slices.Contains([]string{"seal-start", "seal-computed"}, step) {
				if !errors.Is(err, journal.ErrNotFound) || refs != "" {
					t.Fatalf("after a kill at %s: record %v, refs %q: want nothing", step, err, refs)
				}
				return
			}
			if err != nil || rec.State != proposal.Pending || rec.Proposal.Sealed == nil || rec.Proposal.Validate() != nil {
				t.Fatalf("after a kill at %s: %+v %v", step, rec.State, err)
			}
			if refs != proposal.SealedRef(id) {
				t.Fatalf("the sealed objects are not kept: %q", refs)
			}
			// The card is whole: approving it lands the sealed content.
			r.Write("a.txt", "two, and an edit after the crash\n")
			if _, err := j.Approve(id, rec.Proposal.Digest, "pat", ""); err != nil {
				t.Fatal(err)
			}
			done, err := e.Execute(context.Background(), id)
			if err != nil || done.State != proposal.Completed {
				t.Fatalf("execute after the restart: %s %v", done.State, err)
			}
			if got := r.Git("show", "HEAD:a.txt"); got != "two" {
				t.Errorf("landed %q", got)
			}
		})
	}
}

// BenchmarkSubmit_Sealed1000: a sidecar's submit of a commit of 1,000
// changed files, sealed on receipt, until the proposal reaches a journal
// subscriber (what the UI listens to): submit → card visible.
func BenchmarkSubmit_Sealed1000(b *testing.B) {
	s := newSealEnv(b)
	write := func(round int) {
		for i := range 1000 {
			s.repo.Write(fmt.Sprintf("src/pkg%02d/file%04d.txt", i%50, i), fmt.Sprintf("file %d, round %d\n", i, round))
		}
	}
	write(-1)
	s.repo.Commit("1,000 files")
	v := watch(b, s.j)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	var total time.Duration
	for i := range b.N {
		b.StopTimer()
		write(i)
		p := sealedProposal(b, s.repo.Dir, &proposal.CommitArgs{Message: "m", StageAll: true})
		seen := v.expect(p.ID)
		b.StartTimer()
		t0 := time.Now()
		if _, err := s.client.SubmitProposal(b.Context(), "agent-a", p); err != nil {
			b.Fatal(err)
		}
		<-seen
		d := time.Since(t0)
		lat = append(lat, d)
		total += d
		b.StopTimer()
		if _, err := s.j.Cancel(p.ID, "agent-a"); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	report(b, lat, total)
}

// TestSeal_KeepSealed_FoldedNotKeptAgain: at start-up, a pending
// proposal whose objects were folded into the repository's one kept ref
// gets no ref of its own again, and its objects outlast git's gc.
func TestSeal_KeepSealed_FoldedNotKeptAgain(t *testing.T) {
	s := newSealEnv(t)
	s.repo.Write("a.txt", "two\n")
	p := sealedProposal(t, s.repo.Dir, &proposal.CommitArgs{Message: "m", Paths: []string{"a.txt"}})
	if _, err := s.client.SubmitProposal(context.Background(), "agent-a", p); err != nil {
		t.Fatal(err)
	}
	rec, err := s.j.Get(p.ID)
	if err != nil {
		t.Fatal(err)
	}
	none := func([]string) (map[string]bool, error) { return nil, nil }
	if _, err := s.e.TendSealed(context.Background(), s.repo.Dir, none); err != nil {
		t.Fatal(err)
	}
	if err := s.b.KeepSealed(context.Background()); err != nil {
		t.Fatal(err)
	}
	if refs := s.repo.Git("for-each-ref", "--format=%(refname)", "refs/sluice/"); refs != "refs/sluice/kept" {
		t.Errorf("Sluice refs after the start-up's keep: %q", refs)
	}
	s.repo.Git("-c", "gc.reflogExpire=now", "-c", "gc.reflogExpireUnreachable=now", "reflog", "expire", "--all")
	s.repo.Git("gc", "--prune=now", "--quiet")
	if got := s.repo.Git("cat-file", "-t", rec.Proposal.Sealed.After); got != "tree" {
		t.Errorf("the sealed tree after gc: %q", got)
	}
}

// TestSeal_KeptObjectsWrittenBesideTheRecord: the commit that keeps a
// sealed outcome is written while the proposal is stored, so keeping it
// once the record is stored writes only the ref to it; the ref still
// comes after the record (a kill at each step is TestSeal_SIGKILL_WhileSealing).
func TestSeal_KeptObjectsWrittenBesideTheRecord(t *testing.T) {
	root, r := baseRepo(t)
	r.Write("a.txt", "two\n")
	loose := func() map[string]bool {
		out := map[string]bool{}
		m, _ := filepath.Glob(filepath.Join(r.Dir, ".git", "objects", "??", "*"))
		for _, f := range m {
			out[filepath.Base(filepath.Dir(f))+filepath.Base(f)] = true
		}
		return out
	}
	var atKeep map[string]bool
	j, _, b := openSealBackend(t, root, filepath.Join(t.TempDir(), "journal.db"), func(step string) {
		if step == "seal-keep" {
			atKeep = loose()
		}
	})
	defer j.Close()
	p := sealedProposal(t, r.Dir, &proposal.CommitArgs{Message: "m", Paths: []string{"a.txt"}})
	if _, err := b.Submit(context.Background(), "agent-a", p); err != nil {
		t.Fatal(err)
	}
	kept := r.Git("rev-parse", "--verify", proposal.SealedRef(p.ID))
	if atKeep == nil {
		t.Fatal("keeping never began")
	}
	if !atKeep[kept] {
		t.Fatalf("the kept commit %s was written after the record was stored, with its ref", kept)
	}
}
