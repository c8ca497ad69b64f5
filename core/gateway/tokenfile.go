package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice/core/config"
)

// ErrNoGatewayFile means no app has published a gateway on this machine (or
// for this XDG configuration).
var ErrNoGatewayFile = errors.New("gateway file not found: is the Sluice app running?")

// maxTokenFileBytes bounds what a reader of gateway.json will accept.
const maxTokenFileBytes = 16 << 10

// Endpoint is the content of gateway.json: where the app's gateway listens
// and the bearer token that sidecars present.
type Endpoint struct {
	// Addr is a loopback IP literal with port, e.g. "127.0.0.1:41234".
	Addr       string `json:"addr"`
	Token      string `json:"token"`
	PID        int    `json:"pid"`
	AppVersion string `json:"appVersion"`
}

// NewToken returns 32 random bytes, hex encoded.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// WriteEndpoint publishes ep at path (0600) inside a private directory,
// atomically.
func WriteEndpoint(path string, ep Endpoint) error {
	if err := config.EnsurePrivateDir(filepath.Dir(path)); err != nil {
		return err
	}
	b, err := json.MarshalIndent(ep, "", "  ")
	if err != nil {
		return err
	}
	return config.WriteFileAtomic(path, append(b, '\n'), 0o600)
}

// ReadEndpoint reads gateway.json, refusing a symlink, a file readable by
// others, or an address that is not a loopback literal.
func ReadEndpoint(path string) (Endpoint, error) {
	var ep Endpoint
	st, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return ep, ErrNoGatewayFile
	}
	if err != nil {
		return ep, err
	}
	if !st.Mode().IsRegular() {
		return ep, fmt.Errorf("gateway file %s is not a regular file", path)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return ep, fmt.Errorf("gateway file %s has mode %04o; it must be 0600", path, st.Mode().Perm())
	}
	if st.Size() > maxTokenFileBytes {
		return ep, fmt.Errorf("gateway file %s is too large", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ep, err
	}
	if err := json.Unmarshal(b, &ep); err != nil {
		return ep, fmt.Errorf("gateway file %s: %w", path, err)
	}
	if _, err := ParseLoopbackAddr(ep.Addr); err != nil {
		return ep, fmt.Errorf("gateway file %s: %w", path, err)
	}
	if ep.Token == "" {
		return ep, fmt.Errorf("gateway file %s has no token", path)
	}
	return ep, nil
}

// RemoveEndpoint deletes gateway.json if it still names this process, so
// that a newer app's file is never removed by an older one shutting down.
func RemoveEndpoint(path string, pid int) {
	ep, err := ReadEndpoint(path)
	if err == nil && ep.PID == pid {
		os.Remove(path)
	}
}
