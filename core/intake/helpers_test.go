package intake

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sluicehq/sluice/core/gateway"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/policy"
	"github.com/sluicehq/sluice/core/proposal"
)

// memRecorder keeps audit events in memory.
type memRecorder struct {
	mu     sync.Mutex
	events []journal.Event
}

func (m *memRecorder) Record(ev journal.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, ev)
	return nil
}

func (m *memRecorder) types() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, e := range m.events {
		out = append(out, e.Type)
	}
	return out
}

// env is a real gateway over a real journal in temp dirs.
type env struct {
	j       *journal.Journal
	backend *Intake
	rec     *memRecorder
	srv     *gateway.Server
	client  *gateway.Client
	token   string
	root    string
	repo    string
}

type envOptions struct {
	policy     *policy.Policy
	pendingCap int
	recorder   journal.Recorder
	// now is the backend's clock and journalNow the journal's; nil means
	// time.Now.
	now        func() time.Time
	journalNow func() time.Time
}

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	dir := t.TempDir()
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(root, "repo")
	if err := os.Mkdir(repo, 0o700); err != nil {
		t.Fatal(err)
	}
	mem := &memRecorder{}
	var rec journal.Recorder = mem
	if o.recorder != nil {
		rec = o.recorder
	}
	dbPath := filepath.Join(root, "journal.db")
	j, err := journal.Open(dbPath, journal.Options{Recorder: rec, PendingCap: o.pendingCap, Now: o.journalNow})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	backend := New(j, Options{Roots: gitx.Roots{root}, Policy: o.policy, Logger: quiet, Now: o.now})
	srv, client, token := serve(t, backend, j, dbPath)
	return &env{j: j, backend: backend, rec: mem, srv: srv, client: client, token: token, root: root, repo: repo}
}

// serve runs a real gateway over backend on loopback with a client for
// it; on cleanup the server stops, j closes and its file is checked.
func serve(t testing.TB, backend gateway.Backend, j *journal.Journal, dbPath string) (*gateway.Server, *gateway.Client, string) {
	t.Helper()
	token, _ := gateway.NewToken()
	srv, err := gateway.Listen(gateway.Options{Token: token, AppVersion: "test", Backend: backend, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	client, err := gateway.NewClient(srv.Addr(), token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		j.Close()
		checkDB(t, dbPath)
	})
	return srv, client, token
}

func checkDB(t testing.TB, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Errorf("reopen for check: %v", err)
		return
	}
	defer db.Close()
	db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			t.Errorf("bbolt check: %v", err)
		}
		return nil
	})
}

var idSeq atomic.Int64

const sha = "0123456789abcdef0123456789abcdef01234567"

// branchProposal is a sealed proposal to create a branch, made now.
func (e *env) branchProposal(t testing.TB, agent string) proposal.Proposal {
	t.Helper()
	return e.proposal(t, agent, &proposal.BranchArgs{Name: "agent/b", StartPoint: "main"}, func(p *proposal.Proposal) {
		p.Pinned.Refs["main"] = sha
	})
}

// commitProposal commits paths on agent/x.
func (e *env) commitProposal(t testing.TB, agent string, paths ...string) proposal.Proposal {
	t.Helper()
	return e.proposal(t, agent, &proposal.CommitArgs{Message: "m", Paths: paths, Branch: "agent/x"}, func(p *proposal.Proposal) {
		p.Pinned.Refs["HEAD"] = sha
		p.Pinned.Refs["refs/heads/agent/x"] = sha
	})
}

func (e *env) proposal(t testing.TB, agent string, a proposal.Args, pin func(*proposal.Proposal)) proposal.Proposal {
	t.Helper()
	now := time.Now()
	p := proposal.Proposal{
		ID: fmt.Sprintf("gw-%d-%d", os.Getpid(), idSeq.Add(1)), Op: a.Op(), Repo: e.repo, Args: a,
		Reason: "test", Agent: agent, Pinned: proposal.Pinned{Refs: map[string]string{}},
		CreatedAt: proposal.At(now), ExpiresAt: proposal.At(now.Add(10 * time.Minute)),
	}
	pin(&p)
	if err := p.Seal(); err != nil {
		t.Fatal(err)
	}
	return p
}

func reseal(t testing.TB, p *proposal.Proposal) {
	t.Helper()
	if err := p.Seal(); err != nil {
		t.Fatal(err)
	}
}

// raw sends a hand-written HTTP/1.1 request to addr and returns the status
// and body, so that tests control every byte (paths, Host, headers).
func raw(t testing.TB, addr, request string) (int, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// req builds a raw request with the usual headers; extra lines are added
// verbatim.
func (e *env) req(method, path string, extra ...string) string {
	lines := []string{
		method + " " + path + " HTTP/1.1",
		"Host: " + e.srv.Addr(),
		"Authorization: Bearer " + e.token,
		"X-Sluice-Agent: agent-a",
		"Connection: close",
	}
	lines = append(lines, extra...)
	return strings.Join(lines, "\r\n") + "\r\n\r\n"
}
