package audit

import (
	"crypto/ed25519"
	"fmt"

	"github.com/sluicehq/sluice/core/config"
)

// SetupFor is the ledger as configured: the key is created on first run
// only when its path is the default one.
func SetupFor(cfg *config.Config) Setup {
	return Setup{
		LogPath:   cfg.AuditLog(),
		KeyPath:   cfg.AuditKeyFile,
		PubPath:   cfg.AuditPublicKeyFile(),
		Sign:      cfg.AuditSigning,
		CreateKey: !cfg.AuditKeyConfigured,
	}
}

// Setup is how a Sluice process (the app or a sidecar) opens the shared
// ledger from its configuration.
type Setup struct {
	LogPath string
	KeyPath string
	PubPath string
	// Sign is on unless the person turned signing off explicitly.
	Sign bool
	// CreateKey allows creating the key pair on first run. It is false when
	// the key path was configured explicitly: a configured key that is
	// missing stops start-up rather than being replaced.
	CreateKey bool
}

// Open loads (or, when allowed, creates) the signing key and opens the
// ledger. Any problem with a key that signing needs is an error: Sluice
// never falls back to unsigned entries on its own.
func (s Setup) Open() (*Ledger, ed25519.PublicKey, error) {
	var key ed25519.PrivateKey
	if s.Sign {
		var err error
		if s.CreateKey {
			key, _, err = EnsureKey(s.KeyPath, s.PubPath)
		} else {
			key, err = LoadPrivateKey(s.KeyPath)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("audit signing key: %w", err)
		}
	}
	l, err := Open(Options{Path: s.LogPath, Key: key})
	if err != nil {
		return nil, nil, fmt.Errorf("audit ledger: %w", err)
	}
	var pub ed25519.PublicKey
	if key != nil {
		pub = key.Public().(ed25519.PublicKey)
	}
	return l, pub, nil
}
