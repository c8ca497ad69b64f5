package audit

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestOpen_TornTail(t *testing.T) {
	tests := []struct {
		name  string
		tear  func(lines []string) []byte
		lines int // complete entries after repair
	}{
		{"valid last line missing its newline", func(l []string) []byte {
			return []byte(strings.Join(l, "\n"))
		}, 4},
		{"half-written last line", func(l []string) []byte {
			last := l[3]
			return []byte(strings.Join(l[:3], "\n") + "\n" + last[:len(last)/2])
		}, 3},
		{"valid entry that does not link", func(l []string) []byte {
			return []byte(strings.Join(l, "\n") + "\n" + l[1])
		}, 4},
		{"garbage tail", func(l []string) []byte {
			return []byte(strings.Join(l, "\n") + "\n\x00\x00\x00")
		}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := newTestKey(t)
			path := ledgerPath(t)
			l := openLedger(t, Options{Path: path, Key: key.priv})
			appendN(t, l, 4)
			l.Close()
			os.WriteFile(path, tt.tear(readLines(t, path)), 0o600)

			l2 := openLedger(t, Options{Path: path, Key: key.priv})
			data, _ := os.ReadFile(path)
			if len(data) == 0 || data[len(data)-1] != '\n' {
				t.Fatal("file not newline-terminated after Open")
			}
			if n := len(readLines(t, path)); n != tt.lines {
				t.Fatalf("%d lines after repair, want %d", n, tt.lines)
			}
			r, err := l2.Append(sampleEntry(9))
			if err != nil || r.Sequence != uint64(tt.lines+1) {
				t.Fatalf("Append after repair: %+v, %v", r, err)
			}
			if _, err := Verify(path, key.pub(), VerifyOptions{RequireSigned: true}); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestOpen_LoneCorruptRecordFailsClosed(t *testing.T) {
	for name, content := range map[string]string{
		"unterminated fragment": `{"auditChainVersion":1,"seq`,
		"terminated garbage":    "not json\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := ledgerPath(t)
			l := openLedger(t, Options{Path: path})
			l.Close()
			os.WriteFile(path, []byte(content), 0o600)
			l2, openErr := Open(Options{Path: path})
			var err error
			if openErr == nil {
				// Open repairs only the tail; a complete but corrupt last
				// record is met by the first append.
				_, err = l2.Append(sampleEntry(0))
				l2.Close()
			} else {
				err = openErr
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("got %v, want ErrCorrupt", err)
			}
			if data, _ := os.ReadFile(path); string(data) != content {
				t.Error("the corrupt record was modified")
			}
		})
	}
}

// TestAppend_RepairsTearFromAnotherWriter: a writer that dies mid-line while
// this Ledger is open leaves a tear that the next Append cleans up.
func TestAppend_RepairsTearFromAnotherWriter(t *testing.T) {
	key := newTestKey(t)
	path := ledgerPath(t)
	l := openLedger(t, Options{Path: path, Key: key.priv})
	appendN(t, l, 3)
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"auditChainVersion":1,"id":"x`)
	f.Close()
	if r, err := l.Append(sampleEntry(3)); err != nil || r.Sequence != 4 {
		t.Fatalf("Append = %+v, %v", r, err)
	}
	if _, err := Verify(path, key.pub(), VerifyOptions{RequireSigned: true}); err != nil {
		t.Error(err)
	}
}
