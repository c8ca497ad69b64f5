package apply

import (
	"os/exec"
	"testing"
)

// TestOps_Steps_Current: ops_gen.go gives every step that an
// ops_<operation>.go file declares to its operation's arguments (go
// generate writes it).
func TestOps_Steps_Current(t *testing.T) {
	out, err := exec.Command("go", "run", "../../build/opsgen", "-check", "apply").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}
