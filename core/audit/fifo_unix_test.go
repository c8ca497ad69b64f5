//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package audit

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestVerify_FIFOIsRefusedWithoutBlocking: a FIFO under a segment name must
// fail verification, not hang it.
func TestVerify_FIFOIsRefusedWithoutBlocking(t *testing.T) {
	key, path, _ := signedLedger(t, 2)
	fifo := filepath.Join(filepath.Dir(path), segmentName(filepath.Base(path), 1, 1, "11111111-1111-4111-8111-111111111111"))
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Verify(path, key.pub(), VerifyOptions{})
		done <- err
	}()
	select {
	case err := <-done:
		var ve *VerifyError
		if !errors.As(err, &ve) || ve.Reason != "not a regular file" {
			t.Errorf("Verify = %v", err)
		}
	case <-time.After(time.Minute):
		// Opened for reading, a FIFO blocks until a writer comes, which
		// none ever does: a minute is a backstop, not a timing.
		t.Fatal("Verify blocked on a FIFO")
	}
	if _, err := Tail(path, 10); err == nil {
		t.Error("Tail read through a FIFO segment")
	}
}
