package proposal

import "testing"

// TestDescribe_EveryOperation: every operation describes itself in more
// words than its name (a restore point is labelled "before" it).
func TestDescribe_EveryOperation(t *testing.T) {
	for _, op := range Ops() {
		args, err := DecodeArgs(op, []byte(`{}`))
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		if d := args.Describe(); d == "" || (d == string(op) && op != OpPatch) {
			t.Errorf("%s is described as %q: every operation says more than its name", op, d)
		}
	}
}
