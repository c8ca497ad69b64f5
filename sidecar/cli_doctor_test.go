package sidecar

import (
	"strings"
	"testing"
)

// TestCLIDoctor_NoApp_Fails: the sidecar cannot forward proposals without
// the app, so its doctor fails where the app's only warns.
func TestCLIDoctor_NoApp_Fails(t *testing.T) {
	testEnv(t)
	code, out, _ := runMain("doctor")
	if code != 1 || !strings.Contains(out, "fail  gateway") {
		t.Fatalf("doctor with no app running: exit %d\n%s", code, out)
	}
}
