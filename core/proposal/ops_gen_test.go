package proposal

import (
	"os/exec"
	"testing"
)

// TestOps_Inventory_Current: ops_gen.go lists every opDef that an
// op_<operation>.go file declares (go generate writes it), so an
// operation added without it fails here rather than being unknown.
func TestOps_Inventory_Current(t *testing.T) {
	out, err := exec.Command("go", "run", "../../build/opsgen", "-check", "proposal").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}
