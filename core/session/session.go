package session

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/presence"
	"github.com/sluicehq/sluice/core/proposal"
)

// State is where a session is in its life.
type State string

const (
	// StateRunning: its launcher runs; the agent works in the copy.
	StateRunning State = "running"
	// StateEnded: the launcher is gone. The copy stays until what the
	// agent left in it and never proposed has been offered and decided.
	StateEnded State = "ended"
	// StateClosed: nothing of the session is left to offer; the copy is
	// removed.
	StateClosed State = "closed"
)

// Runtimes a session can run under.
const (
	RuntimeBubblewrap = "bubblewrap"
	RuntimeRunsc      = "runsc"
	RuntimeDocker     = "docker"
	// RuntimeKubernetes runs the agent in a pod of the configured
	// namespace (workspaceRuntime kubernetes, kubernetes.sessionImage).
	RuntimeKubernetes = "kubernetes"
)

// Session is one confined agent session: what session.json holds. Only
// the app writes it; the launcher learns its part from the registration's
// answer.
type Session struct {
	ID string `json:"id"`
	// Client is the known client (connect's name: claude-code, codex, …);
	// empty for `sluice run -- COMMAND`, where Command names the program.
	Client  string `json:"client,omitempty"`
	Command string `json:"command,omitempty"`
	// Agent is the identity the session's proposals carry.
	Agent string `json:"agent"`
	// Repo is the person's repository (canonical working-tree root); the
	// agent sees the copy at this path.
	Repo string `json:"repo"`
	// Objects is the person's object directory (canonical), which the copy
	// borrows from, read-only.
	Objects string `json:"objects"`
	// Base is the commit the copy was made at; Branch the branch HEAD was
	// on then ("" when detached).
	Base   string `json:"base"`
	Branch string `json:"branch,omitempty"`
	// Runtime is the sandbox: bubblewrap, runsc, docker or kubernetes.
	Runtime string `json:"runtime"`
	// Image is the image a docker or runsc session runs in (by ID): the
	// workspace image the app had when it started the session.
	Image string `json:"image,omitempty"`
	// Network are the hosts the session may reach: the client's model
	// hosts, then Granted.
	Network []string `json:"network"`
	// Granted are the hosts the person allowed for this session on top of
	// the client's own (--allow-host), each audited.
	Granted []string `json:"granted,omitempty"`
	State   State    `json:"state"`
	// LauncherPID and LauncherStart identify the `sluice run` process; the
	// session runs while that process does.
	LauncherPID   int    `json:"launcherPid"`
	LauncherStart uint64 `json:"launcherStart,omitempty"`
	// TokenHash is the session token's SHA-256: the token is the session's
	// identity at the gateway, and only its launcher and sidecar hold it.
	TokenHash string    `json:"tokenHash"`
	StartedAt time.Time `json:"startedAt"`
	EndedAt   time.Time `json:"endedAt,omitzero"`
	// Leftover is the proposal Sluice made of what the session left
	// unproposed; LeftoverFiles how many files it holds.
	Leftover      string `json:"leftover,omitempty"`
	LeftoverFiles int    `json:"leftoverFiles,omitempty"`
	// Note says why the session is in its state when that is not plain
	// (for example why its leftover could not be offered yet).
	Note string `json:"note,omitempty"`
}

// Origin is what the session's proposals carry.
func (s *Session) Origin() *proposal.Origin {
	return &proposal.Origin{Session: s.ID, Runtime: s.Runtime, Network: slices.Clone(s.Network)}
}

// Name is the program the session runs: its client or its command.
func (s *Session) Name() string {
	if s.Client != "" {
		return s.Client
	}
	return s.Command
}

// Errors callers branch on.
var (
	// ErrNotFound: no session has that id.
	ErrNotFound = &errcode.Error{Code: errcode.NotFound, Msg: "no confined session has that id"}
	// ErrBadID: the id is not a session id.
	ErrBadID = &errcode.Error{Code: errcode.InvalidArgument, Msg: "a session id is 1–64 characters of A-Z a-z 0-9 _ -"}
)

// Store keeps sessions under <StateDir>/sessions: one directory each
// (session.json, the copy, the mount point its origin is seen at), and the
// confined homes of each program under homes/. It is the app's: the app is
// the only writer of session.json. Safe for concurrent use.
type Store struct {
	root string
	mu   sync.Mutex
	// tokens maps a token hash to its session id, for every record
	// written or read since the store was opened.
	tokens map[string]string
}

// OpenStore prepares <stateDir>/sessions (0700).
func OpenStore(stateDir string) (*Store, error) {
	root := filepath.Join(stateDir, "sessions")
	if err := config.EnsurePrivateDir(root); err != nil {
		return nil, err
	}
	st := &Store{root: root, tokens: map[string]string{}}
	// Sessions that ran before a restart keep their tokens.
	_, _ = st.List()
	return st, nil
}

// Root is the store's directory.
func (st *Store) Root() string { return st.root }

// Dir is session id's directory.
func (st *Store) Dir(id string) string { return filepath.Join(st.root, id) }

// CopyDir is where session id's private copy of the repository lives.
func (st *Store) CopyDir(id string) string { return filepath.Join(st.root, id, "copy") }

// OriginDir is an empty directory of session id's, on which the session's
// sidecar sees the person's repository (read-only) while the copy takes
// the repository's own path.
func (st *Store) OriginDir(id string) string { return filepath.Join(st.root, id, "origin") }

// HomeDir is the confined home of a program: the only HOME its agent
// ever sees, kept across sessions so that its own settings and history
// stay. name is a client or a command name.
func (st *Store) HomeDir(name string) string { return filepath.Join(st.root, "homes", name) }

func (st *Store) metaPath(id string) string { return filepath.Join(st.root, id, "session.json") }

// NewID returns a fresh session id.
func NewID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// NewToken returns a session token and its hash.
func NewToken() (token, hash string, err error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", err
	}
	token = "sluice_session_" + hex.EncodeToString(b[:])
	return token, HashToken(token), nil
}

// HashToken is the stored form of a session token.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Matches reports, in constant time, whether token is this session's.
func (s *Session) Matches(token string) bool {
	return subtle.ConstantTimeCompare([]byte(HashToken(token)), []byte(s.TokenHash)) == 1
}

// LauncherAlive reports whether the session's `sluice run` still runs.
func (s *Session) LauncherAlive() bool {
	return presence.ProcessAlive(s.LauncherPID, s.LauncherStart)
}

// Prepare makes session id's directory (0700) and the empty directory
// its origin is seen at; the copy is made inside it next, and Save writes
// the record last, so a crash in between leaves a directory without a
// record, which Sweep removes.
func (st *Store) Prepare(id string) error {
	if !proposal.ValidSessionID(id) {
		return ErrBadID
	}
	if err := os.Mkdir(st.Dir(id), 0o700); err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot create the session's directory: %v", err)
	}
	if err := os.Mkdir(st.OriginDir(id), 0o700); err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot create the session's directory: %v", err)
	}
	return nil
}

// Save writes session s's record.
func (st *Store) Save(s *Session) error {
	if !proposal.ValidSessionID(s.ID) {
		return ErrBadID
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.write(s)
}

// Discard removes session id's directory, copy and all: for a session
// that never started.
func (st *Store) Discard(id string) error {
	if !proposal.ValidSessionID(id) {
		return ErrBadID
	}
	return removeAll(st.Dir(id))
}

// Sweep removes session directories without a record: a start that a
// crash interrupted before the record was written.
func (st *Store) Sweep() error {
	des, err := os.ReadDir(st.root)
	if err != nil {
		return err
	}
	var errs []error
	for _, de := range des {
		if !de.IsDir() || !proposal.ValidSessionID(de.Name()) || de.Name() == "homes" {
			continue
		}
		if _, err := os.Lstat(st.metaPath(de.Name())); errors.Is(err, os.ErrNotExist) {
			errs = append(errs, removeAll(st.Dir(de.Name())))
		}
	}
	return errors.Join(errs...)
}

func (st *Store) write(s *Session) error {
	st.tokens[s.TokenHash] = s.ID
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return config.WriteFileAtomic(st.metaPath(s.ID), append(b, '\n'), 0o600)
}

// Get reads session id.
func (st *Store) Get(id string) (*Session, error) {
	if !proposal.ValidSessionID(id) {
		return nil, ErrBadID
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.read(id)
}

func (st *Store) read(id string) (*Session, error) {
	b, err := os.ReadFile(st.metaPath(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	var s Session
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("session %s: %w", id, err)
	}
	if s.ID != id {
		return nil, fmt.Errorf("session %s: its record names %q", id, s.ID)
	}
	st.tokens[s.TokenHash] = s.ID
	return &s, nil
}

// Update changes session id under the store's lock and writes it.
func (st *Store) Update(id string, fn func(*Session) error) (*Session, error) {
	if !proposal.ValidSessionID(id) {
		return nil, ErrBadID
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	s, err := st.read(id)
	if err != nil {
		return nil, err
	}
	if err := fn(s); err != nil {
		return nil, err
	}
	return s, st.write(s)
}

// List returns every session, newest first. A directory whose record
// cannot be read is skipped (and reported in the error, joined).
func (st *Store) List() ([]*Session, error) {
	des, err := os.ReadDir(st.root)
	if err != nil {
		return nil, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	var out []*Session
	var errs []error
	for _, de := range des {
		if !de.IsDir() || de.Name() == "homes" || !proposal.ValidSessionID(de.Name()) {
			continue
		}
		s, err := st.read(de.Name())
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StartedAt.After(out[j].StartedAt) })
	return out, errors.Join(errs...)
}

// ByToken finds the running session a token belongs to.
func (st *Store) ByToken(token string) (*Session, bool) {
	if !strings.HasPrefix(token, "sluice_session_") {
		return nil, false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	id, ok := st.tokens[HashToken(token)]
	if !ok {
		return nil, false
	}
	s, err := st.read(id)
	if err != nil || s.State != StateRunning || !s.Matches(token) {
		return nil, false
	}
	return s, true
}

// RemoveCopy deletes session id's copy and marks it closed. The record
// stays, so History can still say where a proposal came from.
func (st *Store) RemoveCopy(id string) error {
	if !proposal.ValidSessionID(id) {
		return ErrBadID
	}
	if err := removeAll(st.CopyDir(id)); err != nil {
		return err
	}
	_, err := st.Update(id, func(s *Session) error {
		s.State = StateClosed
		return nil
	})
	return err
}

// removeAll removes a tree the agent wrote: its directories may have had
// their write bit taken away, which os.RemoveAll cannot get past.
func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// GitHome is the HOME Sluice's own git runs with on copies: a directory
// of its own, with no configuration.
func (st *Store) GitHome() (string, error) {
	d := filepath.Join(st.root, ".git-home")
	return d, config.EnsurePrivateDir(d)
}
