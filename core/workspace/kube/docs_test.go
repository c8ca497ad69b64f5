package kube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The Role a platform team applies is written down in the architecture
// document exactly as Doctor checks it.
func TestRoleYAML_InTheDocs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "```yaml\n"+RoleYAML+"```") {
		t.Fatal("docs/architecture.md does not hold kube.RoleYAML as it is: copy it into the Kubernetes section")
	}
}
