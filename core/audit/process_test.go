package audit

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
)

const (
	helperLedgerEnv = "SLUICE_AUDIT_HELPER_LEDGER"
	helperKeyEnv    = "SLUICE_AUDIT_HELPER_KEY"
	helperMaxEnv    = "SLUICE_AUDIT_HELPER_MAX_BYTES"
	helperSegEnv    = "SLUICE_AUDIT_HELPER_MAX_SEGMENTS"
	helperAppends   = 25
	helperProcesses = 8
)

// TestHelperProcess is not a test: TestLedger_CrossProcess runs the test
// binary again with this as its only test to get independent writer
// processes.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv(helperLedgerEnv)
	if path == "" {
		t.Skip("helper for TestLedger_CrossProcess")
	}
	key, err := LoadPrivateKey(os.Getenv(helperKeyEnv))
	if err != nil {
		t.Fatal(err)
	}
	maxBytes, _ := strconv.ParseInt(os.Getenv(helperMaxEnv), 10, 64)
	maxSegs, _ := strconv.Atoi(os.Getenv(helperSegEnv))
	l, err := Open(Options{Path: path, Key: key, MaxFileBytes: maxBytes, MaxSegments: maxSegs})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range helperAppends {
		if _, err := l.Append(sampleEntry(i)); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
}

func TestLedger_CrossProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	tests := []struct {
		name     string
		maxBytes int64
		maxSegs  int
	}{
		{"OneFile", 0, 0},
		{"RotatingAndPruning", 6 << 10, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := newTestKey(t)
			path := ledgerPath(t)
			// Create the ledger up front so that the children race on
			// appends, not on creating the directory.
			openLedger(t, Options{Path: path}).Close()

			var wg sync.WaitGroup
			errs := make([]error, helperProcesses)
			outs := make([][]byte, helperProcesses)
			for i := range helperProcesses {
				wg.Add(1)
				go func() {
					defer wg.Done()
					cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
					cmd.Env = append(os.Environ(),
						helperLedgerEnv+"="+path,
						helperKeyEnv+"="+key.privPath,
						fmt.Sprintf("%s=%d", helperMaxEnv, tt.maxBytes),
						fmt.Sprintf("%s=%d", helperSegEnv, tt.maxSegs),
					)
					outs[i], errs[i] = cmd.CombinedOutput()
				}()
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("helper %d: %v\n%s", i, err, outs[i])
				}
			}

			const total = helperProcesses * helperAppends
			rep, err := Verify(path, key.pub(), VerifyOptions{RequireSigned: true})
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if rep.LastSeq != total || rep.Chained != int(rep.LastSeq-rep.FirstSeq+1) {
				t.Errorf("report %+v, want chain ending at %d", rep, total)
			}
			if tt.maxBytes == 0 && (rep.FirstSeq != 1 || rep.Chained != total) {
				t.Errorf("report %+v, want 1..%d", rep, total)
			}
			code, out, errOut := runVerify(path, "--pubkey", key.pubPath, "--require-signed")
			if code != 0 || !strings.Contains(out, fmt.Sprintf("..%d\n", total)) {
				t.Errorf("verify-audit = %d\n%s%s", code, out, errOut)
			}
		})
	}
}
