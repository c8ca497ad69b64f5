package config

import (
	"errors"
	"os"
	"strings"
	"testing"
)

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestLoad_Kubernetes(t *testing.T) {
	good := `{"workspaceRuntime":"kubernetes","kubernetes":{"namespace":"sluice-ws","image":"registry.example:5000/team/ws@` + testDigest + `","runtimeClassName":"gvisor","imagePullPolicy":"Never","egressProxy":"10.0.0.5","context":"ci","kubeconfig":"/etc/kube/config","podUIDs":"2000000000-2000999999"}}`
	dir := isolate(t)
	t.Setenv("SLUICE_WORKSPACE_RUNTIME", "")
	os.Unsetenv("SLUICE_WORKSPACE_RUNTIME")
	writeConfig(t, dir, good)
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if !c.OnKubernetes() || c.Kubernetes.Namespace != "sluice-ws" || c.Kubernetes.RuntimeClassName != "gvisor" || c.Kubernetes.Context != "ci" ||
		c.Kubernetes.PodUIDs != "2000000000-2000999999" {
		t.Fatalf("kubernetes settings not read: %+v", c.Kubernetes)
	}
	if c.WorkspaceRunImage() != c.Kubernetes.Image || c.WorkspaceOCIRuntime() != "" {
		t.Fatalf("run image %q, OCI runtime %q", c.WorkspaceRunImage(), c.WorkspaceOCIRuntime())
	}

	// The block is ignored, not validated, while the Engine runs workspaces.
	writeConfig(t, dir, `{"workspaceRuntime":"runsc","kubernetes":{"namespace":"NOT A NAME"}}`)
	if c, err = Load(); err != nil || c.OnKubernetes() || c.WorkspaceOCIRuntime() != "runsc" {
		t.Fatalf("docker runtime with an unused block: %v %+v", err, c)
	}

	for name, body := range map[string]string{
		"no namespace":     `{"workspaceRuntime":"kubernetes","kubernetes":{"image":"ws@` + testDigest + `"}}`,
		"bad namespace":    `{"workspaceRuntime":"kubernetes","kubernetes":{"namespace":"Sluice_WS","image":"ws@` + testDigest + `"}}`,
		"no block":         `{"workspaceRuntime":"kubernetes"}`,
		"tag, not digest":  `{"workspaceRuntime":"kubernetes","kubernetes":{"namespace":"ws","image":"ws:latest"}}`,
		"short digest":     `{"workspaceRuntime":"kubernetes","kubernetes":{"namespace":"ws","image":"ws@sha256:abc"}}`,
		"relative config":  `{"workspaceRuntime":"kubernetes","kubernetes":{"namespace":"ws","image":"ws@` + testDigest + `","kubeconfig":"kube/config"}}`,
		"pull always":      `{"workspaceRuntime":"kubernetes","kubernetes":{"namespace":"ws","image":"ws@` + testDigest + `","imagePullPolicy":"Always"}}`,
		"bad class":        `{"workspaceRuntime":"kubernetes","kubernetes":{"namespace":"ws","image":"ws@` + testDigest + `","runtimeClassName":"g visor"}}`,
		"bad proxy":        `{"workspaceRuntime":"kubernetes","kubernetes":{"namespace":"ws","image":"ws@` + testDigest + `","egressProxy":"proxy.example:3128"}}`,
		"unknown field":    `{"workspaceRuntime":"kubernetes","kubernetes":{"namespace":"ws","image":"ws@` + testDigest + `","privileged":true}}`,
		"image with space": `{"workspaceRuntime":"kubernetes","kubernetes":{"namespace":"ws","image":"w s@` + testDigest + `"}}`,
		"uid range small":  `{"workspaceRuntime":"kubernetes","kubernetes":{"namespace":"ws","image":"ws@` + testDigest + `","podUIDs":"100000-100999"}}`,
		"uid range root":   `{"workspaceRuntime":"kubernetes","kubernetes":{"namespace":"ws","image":"ws@` + testDigest + `","podUIDs":"0-100000"}}`,
		"uid range high":   `{"workspaceRuntime":"kubernetes","kubernetes":{"namespace":"ws","image":"ws@` + testDigest + `","podUIDs":"2147480000-2147483647"}}`,
		"uid range form":   `{"workspaceRuntime":"kubernetes","kubernetes":{"namespace":"ws","image":"ws@` + testDigest + `","podUIDs":"100000"}}`,
	} {
		writeConfig(t, dir, body)
		_, err := Load()
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		} else if !strings.Contains(err.Error(), "kubernetes") && !strings.Contains(err.Error(), `"privileged"`) {
			t.Errorf("%s: the error does not name the setting: %v", name, err)
		}
	}
}
