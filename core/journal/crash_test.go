package journal

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sluicehq/sluice/core/proposal"
)

const helperEnv = "SLUICE_JOURNAL_CRASH_HELPER"

// TestHelperProcess is not a test: the crash test re-executes the test
// binary with helperEnv set, and then this runs the journal under a
// stream of submits and decisions until it is killed. After each committed
// operation it prints "ACK <id> <state> <version>" on stdout; the parent
// treats only acknowledged operations as promised.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("helper for TestJournal_Crash_SIGKILL")
	}
	err := runCrashHelper(os.Getenv("CRASH_DB"), os.Getenv("CRASH_AUDIT"))
	fmt.Fprintln(os.Stderr, "helper stopped:", err)
	os.Exit(3)
}

func runCrashHelper(dbPath, auditPath string) error {
	rec, err := openChain(auditPath)
	if err != nil {
		return err
	}
	j, err := Open(dbPath, Options{Recorder: rec, PendingCap: 100000, LockTimeout: 10 * time.Second})
	if err != nil {
		return err
	}
	ack := func(r Record) {
		// One write per line: the parent either sees it whole or not at all.
		os.Stdout.WriteString(fmt.Sprintf("ACK %s %s %d\n", r.Proposal.ID, r.State, r.Version))
	}
	if _, err := j.Recover(nil); err != nil {
		return err
	}
	byState := map[proposal.State][]string{}
	open, err := j.List(Filter{States: []proposal.State{proposal.Pending, proposal.Approved, proposal.Executing}})
	if err != nil {
		return err
	}
	for _, r := range open {
		byState[r.State] = append(byState[r.State], r.Proposal.ID)
	}
	take := func(st proposal.State) (string, bool) {
		ids := byState[st]
		if len(ids) == 0 {
			return "", false
		}
		i := mrand.IntN(len(ids))
		id := ids[i]
		byState[st] = append(ids[:i], ids[i+1:]...)
		return id, true
	}
	put := func(r Record) {
		ack(r)
		if !r.State.Terminal() {
			byState[r.State] = append(byState[r.State], r.Proposal.ID)
		}
	}
	os.Stdout.WriteString("READY\n")
	session := randomHex(4)
	agents := []string{"agent-a", "agent-b", "agent-c"}
	for n := 0; ; n++ {
		var r Record
		var err error
		switch x := mrand.IntN(100); {
		case x < 40:
			p := newProposal(helperTB{}, time.Now(), agents[mrand.IntN(len(agents))], "f"+strconv.Itoa(mrand.IntN(50)))
			p.ID = session + "-" + strconv.Itoa(n)
			if mrand.IntN(3) == 0 {
				p.IdempotencyKey = "k" + strconv.Itoa(mrand.IntN(20))
			}
			if err := p.Seal(); err != nil {
				return err
			}
			var replayed bool
			r, replayed, err = j.Submit(p)
			if err == nil && replayed {
				continue
			}
		case x < 60:
			id, ok := take(proposal.Pending)
			if !ok {
				continue
			}
			cur, _ := j.Get(id)
			r, err = j.Approve(id, cur.Proposal.Digest, "person", "")
		case x < 70:
			id, ok := take(proposal.Pending)
			if !ok {
				continue
			}
			r, err = j.Reject(id, "person", "no")
		case x < 75:
			id, ok := take(proposal.Pending)
			if !ok {
				continue
			}
			cur, _ := j.Get(id)
			r, err = j.Cancel(id, cur.Proposal.Agent)
		case x < 88:
			id, ok := take(proposal.Approved)
			if !ok {
				continue
			}
			cur, _ := j.Get(id)
			r, err = j.MarkExecuting(id, cur.Proposal.Digest)
		default:
			id, ok := take(proposal.Executing)
			if !ok {
				continue
			}
			if mrand.IntN(2) == 0 {
				r, err = j.Complete(id, "executor", Outcome{})
			} else {
				r, err = j.Fail(id, "executor", Outcome{Code: "git_failed", Message: "exit 1"})
			}
		}
		if err != nil {
			// Idempotency conflicts are expected with random keys.
			continue
		}
		put(r)
	}
}

// helperTB lets newProposal run outside a test.
type helperTB struct{ testing.TB }

func (helperTB) Helper()                   {}
func (helperTB) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

type acked struct {
	id      string
	state   proposal.State
	version uint64
}

// TestJournal_Crash_SIGKILL kills a process that is busy with the journal
// at random points, 50 times over the same files, and checks after each
// kill that the file is consistent, nothing acknowledged was lost, no
// state went backwards, and the audit chain verifies with a record for
// every committed transition.
func TestJournal_Crash_SIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test runs 50 processes")
	}
	dir := t.TempDir()
	dbPath, auditPath := filepath.Join(dir, "journal.db"), filepath.Join(dir, "audit.jsonl")
	const rounds = 50
	var ackedAll []acked
	start := time.Now()
	totalAcks := 0
	for round := range rounds {
		acks := runAndKill(t, dbPath, auditPath, time.Duration(5+mrand.IntN(120))*time.Millisecond)
		totalAcks += len(acks)
		ackedAll = append(ackedAll, acks...)
		checkDB(t, dbPath)
		records := readRecords(t, dbPath, round == rounds-1)
		for _, a := range ackedAll {
			rec, ok := records[a.id]
			if !ok {
				t.Fatalf("round %d: acknowledged %s (%s v%d) is missing", round, a.id, a.state, a.version)
			}
			if rec.Version < a.version || rec.History[a.version-1].To != a.state {
				t.Fatalf("round %d: %s went backwards: acknowledged %s v%d, now %s v%d", round, a.id, a.state, a.version, rec.State, rec.Version)
			}
		}
		checkAuditCoversJournal(t, round, auditPath, records)
		if t.Failed() {
			return
		}
	}
	t.Logf("%d rounds, %d acknowledged operations, %s", rounds, totalAcks, time.Since(start).Round(time.Millisecond))
	if totalAcks < rounds {
		t.Fatalf("only %d operations were acknowledged in %d rounds; the helper did not get going", totalAcks, rounds)
	}
}

// runAndKill starts the helper, lets it work for about d after it is
// ready, kills it with SIGKILL and returns what it acknowledged.
func runAndKill(t *testing.T, dbPath, auditPath string, d time.Duration) []acked {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=1", "CRASH_DB="+dbPath, "CRASH_AUDIT="+auditPath)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var acks []acked
	parse := func(l string) {
		f := strings.Fields(l)
		if len(f) == 4 && f[0] == "ACK" {
			v, _ := strconv.ParseUint(f[3], 10, 64)
			acks = append(acks, acked{f[1], proposal.State(f[2]), v})
		}
	}
	ready := time.After(20 * time.Second)
wait:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				cmd.Wait()
				t.Fatalf("helper exited before it was ready: %s", stderr.String())
			}
			if l == "READY" {
				break wait
			}
		case <-ready:
			cmd.Process.Kill()
			t.Fatalf("helper not ready after 20s: %s", stderr.String())
		}
	}
	time.Sleep(d)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for l := range lines {
		parse(l)
	}
	cmd.Wait()
	return acks
}

// readRecords reads every record; with verify it also checks each stored
// proposal against its digest.
func readRecords(t *testing.T, path string, verify bool) map[string]Record {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatalf("open after crash: %v", err)
	}
	defer db.Close()
	out := map[string]Record{}
	err = db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketProposals).ForEach(func(k, v []byte) error {
			var rec Record
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("%s: %v", k, err)
			}
			if verify {
				if err := rec.Proposal.VerifyDigest(); err != nil {
					return fmt.Errorf("%s: %v", k, err)
				}
			}
			out[string(k)] = rec
			return nil
		})
	})
	if err != nil {
		t.Fatalf("read after crash: %v", err)
	}
	return out
}

// checkAuditCoversJournal verifies the chain and the pairing of ledger and
// journal: every committed transition has its event; an event whose
// transition did not commit is allowed only as the last event a process
// wrote before it died.
func checkAuditCoversJournal(t *testing.T, round int, path string, records map[string]Record) {
	t.Helper()
	lines, _, err := readChain(path)
	if err != nil {
		t.Fatalf("round %d: audit chain: %v", round, err)
	}
	type key struct {
		id      string
		version uint64
		to      proposal.State
	}
	seen := map[key]bool{}
	for i, l := range lines {
		if l.Kind != "event" {
			continue
		}
		ev := l.Event
		k := key{ev.ProposalID, ev.Version, ev.To}
		seen[k] = true
		rec, ok := records[ev.ProposalID]
		committed := ok && ev.Version <= rec.Version && rec.History[ev.Version-1].To == ev.To
		if committed {
			continue
		}
		lastOfProcess := i == len(lines)-1 || lines[i+1].Kind == "open"
		if !lastOfProcess {
			t.Fatalf("round %d: audit line %d (%s %s v%d) has no committed transition and is not the last of its process",
				round, l.Seq, ev.Type, ev.ProposalID, ev.Version)
		}
	}
	for id, rec := range records {
		for _, s := range rec.History {
			if !seen[key{id, s.Version, s.To}] {
				t.Fatalf("round %d: committed %s v%d → %s has no audit record", round, id, s.Version, s.To)
			}
		}
	}
}
