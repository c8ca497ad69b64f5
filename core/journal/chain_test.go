package journal

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// chainRecorder is a Recorder for tests that stands in for the audit
// ledger: one JSON line per event, each carrying the hash of the previous
// line, fsynced before Record returns. Opening it verifies the chain,
// repairs a torn last line (a crash in the middle of a write: that Record
// never returned, so its transition never committed) and writes an "open"
// line, so that a verifier can tell process lifetimes apart.
type chainRecorder struct {
	mu   sync.Mutex
	f    *os.File
	prev string
	seq  int
}

// chainLine is one ledger line. Hash covers the line with Hash empty.
type chainLine struct {
	Seq   int    `json:"seq"`
	Prev  string `json:"prev"`
	Kind  string `json:"kind"` // "open" or "event"
	Event *Event `json:"event,omitempty"`
	Hash  string `json:"hash,omitempty"`
}

func (l chainLine) digest() string {
	l.Hash = ""
	b, _ := marshalLine(l)
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func marshalLine(l chainLine) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(l); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil // ends with '\n'
}

func openChain(path string) (*chainRecorder, error) {
	lines, good, err := readChainTail(path)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(good); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	c := &chainRecorder{f: f, prev: "genesis"}
	if n := len(lines); n > 0 {
		c.prev, c.seq = lines[n-1].Hash, lines[n-1].Seq
	}
	if err := c.append(chainLine{Kind: "open"}); err != nil {
		f.Close()
		return nil, err
	}
	return c, nil
}

func (c *chainRecorder) Record(ev Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.append(chainLine{Kind: "event", Event: &ev})
}

func (c *chainRecorder) append(l chainLine) error {
	l.Seq, l.Prev = c.seq+1, c.prev
	l.Hash = l.digest()
	b, err := marshalLine(l)
	if err != nil {
		return err
	}
	if _, err := c.f.Write(b); err != nil {
		return err
	}
	if err := c.f.Sync(); err != nil {
		return err
	}
	c.seq, c.prev = l.Seq, l.Hash
	return nil
}

func (c *chainRecorder) Close() error { return c.f.Close() }

// readChainTail returns the last complete line of the ledger at path
// (checked against its own hash) and the length of the file up to it, so
// that a process starting up does not re-verify the whole history; the
// crash test verifies all of it after every kill.
func readChainTail(path string) ([]chainLine, int64, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	good := int64(bytes.LastIndexByte(data, '\n') + 1)
	if good == 0 {
		return nil, 0, nil
	}
	complete := data[:good-1]
	last := complete[bytes.LastIndexByte(complete, '\n')+1:]
	var l chainLine
	if err := json.Unmarshal(last, &l); err != nil || l.Hash != l.digest() {
		return nil, 0, fmt.Errorf("last ledger line does not verify: %v", err)
	}
	return []chainLine{l}, good, nil
}

// readChain verifies every complete line of the ledger at path and returns
// them with the length of the verified prefix. A final line without its
// newline is a torn write and is left out; anything else that does not
// verify is an error.
func readChain(path string) ([]chainLine, int64, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	var lines []chainLine
	prev, seq := "genesis", 0
	var good int64
	r := bufio.NewReader(bytes.NewReader(data))
	for {
		raw, err := r.ReadBytes('\n')
		if err == io.EOF {
			break // raw, if any, is a torn last line
		}
		var l chainLine
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, 0, fmt.Errorf("line %d: %v", seq+1, err)
		}
		if l.Seq != seq+1 || l.Prev != prev || l.Hash != l.digest() {
			return nil, 0, fmt.Errorf("line %d: chain broken (seq %d, prev %.20s, hash %.20s)", seq+1, l.Seq, l.Prev, l.Hash)
		}
		lines = append(lines, l)
		prev, seq = l.Hash, l.Seq
		good += int64(len(raw))
	}
	return lines, good, nil
}
