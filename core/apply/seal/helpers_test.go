package seal

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/apply/internal/gitrun"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// repoFixture is a real repository in a temporary directory, with a
// first commit.
type repoFixture struct {
	root string
	repo *gitxtest.Repo
}

func newRepo(t testing.TB) *repoFixture {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := gitxtest.InitAt(t, filepath.Join(root, "repo"))
	r.Write("README.md", "# demo\n")
	r.Write("src/a.txt", "a1\na2\na3\n")
	r.Write("src/b.txt", "b1\nb2\nb3\n")
	r.Commit("base")
	return &repoFixture{root: root, repo: r}
}

func (f *repoFixture) git(args ...string) string { return f.repo.Git(args...) }

// gitrun opens the repository as the executor does and returns its git.
func (f *repoFixture) gitrun(t testing.TB) *gitrun.Git {
	t.Helper()
	runner, err := gitx.NewRunner(gitx.RunnerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := runner.Open(testCtx(t), gitx.Roots{f.root}, f.repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return gitrun.New(repo, time.Minute)
}
