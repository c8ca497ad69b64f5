package kubetest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Version is the Kubernetes release the binaries are built from; it is
// K8S_VERSION in build/k8s/cluster.sh, and the k8s.io modules Sluice
// requires are its v0.x twins.
const Version = "v1.37.2"

// BinDir is where build/k8s/cluster.sh puts the binaries:
// $SLUICE_K8S_BIN_DIR, else ${XDG_CACHE_HOME:-$HOME/.cache}/sluice-k8s/<Version>.
func BinDir() string {
	if d := os.Getenv("SLUICE_K8S_BIN_DIR"); d != "" {
		return d
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "sluice-k8s", Version)
}

// missingBinaries names what the control plane needs and dir lacks, or
// returns "" when nothing is missing.
func missingBinaries(dir string, names ...string) string {
	var missing []string
	for _, n := range names {
		fi, err := os.Stat(filepath.Join(dir, n))
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("Kubernetes binaries missing in %s: %s (build/scripts/setup.sh test builds them, or build/k8s/cluster.sh build)",
		dir, strings.Join(missing, ", "))
}

// unavailable skips t saying why, or fails it when the run requires every
// end-to-end prerequisite (SLUICE_REQUIRE_E2E=1, as make test sets).
func unavailable(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("SLUICE_REQUIRE_E2E") == "1" {
		t.Fatal(msg + " (required: SLUICE_REQUIRE_E2E=1)")
	}
	t.Skip(msg)
}
