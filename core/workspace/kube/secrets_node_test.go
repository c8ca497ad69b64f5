package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/sluicehq/sluice/core/workspace"
	"github.com/sluicehq/sluice/core/workspace/kube/kubetest"
)

// TestNode_GrantedSecretReachesTheProgramRevokedDoesNot: on a real node,
// a program sees exactly the secrets granted when its run starts: both
// granted values (compared by digest, the values themselves being redacted
// from the output), then, after one is revoked through a Manager that
// could not reach the cluster (its copy left), nothing of it: the next run
// removes the copy first, and the workspace's Secret holds the other alone.
func TestNode_GrantedSecretReachesTheProgramRevokedDoesNot(t *testing.T) {
	e := onNode(t)
	ctx := context.Background()
	state, conf := privateDirs(t)
	cfg := kubetest.Node(t).Config
	r := newRuntime(t, cfg, Options{Namespace: e.ns, ImagePullPolicy: "Never"})
	down := rest.CopyConfig(cfg)
	down.Host = "https://127.0.0.1:1"
	open := func(rt *Runtime) *workspace.Manager {
		m, err := workspace.Open(workspace.Options{StateDir: state, ConfigDir: conf, Runtime: rt, Image: e.image,
			Limits: workspace.Limits{MemoryBytes: 64 << 20, CPUs: 0.5}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	m, mDown := open(r), open(newRuntime(t, down, Options{Namespace: e.ns}))
	w, err := m.Create(ctx, workspace.CreateRequest{Source: workspace.Source{Kind: workspace.SourceFresh}, Agent: "test"})
	if err != nil {
		t.Fatal(err)
	}
	a, b := "value-of-a-7f3c91", "value-of-b-2d64e0"
	if err := m.Grant(w.ID, "A_TOKEN", a); err != nil {
		t.Fatal(err)
	}
	if err := m.Grant(w.ID, "B_TOKEN", b); err != nil {
		t.Fatal(err)
	}
	digest := func(v string) string { s := sha256.Sum256([]byte(v)); return hex.EncodeToString(s[:]) }
	script := `echo "a_sha=$(printf %s "${A_TOKEN-}" | sha256sum | cut -d' ' -f1)"; echo "b_sha=$(printf %s "${B_TOKEN-}" | sha256sum | cut -d' ' -f1)"; if [ "${A_TOKEN+x}" = x ]; then echo a_present; else echo a_absent; fi`
	run := func() string {
		t.Helper()
		res, err := m.Run(ctx, w.ID, workspace.RunRequest{Argv: []string{"sh", "-c", script}})
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != 0 {
			t.Fatalf("run exit %d: %s %s", res.ExitCode, res.Stdout, res.Stderr)
		}
		if strings.Contains(res.Stdout, a) || strings.Contains(res.Stdout, b) {
			t.Fatalf("a secret's value is in the output: %q", res.Stdout)
		}
		return res.Stdout
	}
	out := run()
	if !strings.Contains(out, "a_sha="+digest(a)+"\n") || !strings.Contains(out, "b_sha="+digest(b)+"\n") || !strings.Contains(out, "a_present") {
		t.Fatalf("the granted secrets did not reach the program: %q", out)
	}

	rev, err := mDown.RevokeSecret(w.ID, "A_TOKEN")
	if err != nil || !rev.CopyLeft {
		t.Fatalf("RevokeSecret with the cluster unreachable: %+v %v", rev, err)
	}
	s, err := e.cs.CoreV1().Secrets(e.ns).Get(ctx, wsSecretName(w.ID), metav1.GetOptions{})
	if err != nil || string(s.Data["A_TOKEN"]) != a {
		t.Fatalf("the copy the revoke could not reach: %v", err)
	}
	out = run()
	if !strings.Contains(out, "a_absent") || !strings.Contains(out, "a_sha="+digest("")+"\n") || !strings.Contains(out, "b_sha="+digest(b)+"\n") {
		t.Fatalf("after the revoke the program saw: %q", out)
	}
	s, err = e.cs.CoreV1().Secrets(e.ns).Get(ctx, wsSecretName(w.ID), metav1.GetOptions{})
	if err != nil || len(s.Data) != 1 || string(s.Data["B_TOKEN"]) != b {
		t.Fatalf("the workspace's Secret after the revoke and a run: %v %v", keys(s.Data), err)
	}
	if _, err := m.RevokeSecret(w.ID, "B_TOKEN"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.CoreV1().Secrets(e.ns).Get(ctx, wsSecretName(w.ID), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the workspace's Secret after the last revoke: %v", err)
	}
	out = run()
	if !strings.Contains(out, "a_absent") || !strings.Contains(out, "b_sha="+digest("")+"\n") {
		t.Fatalf("with nothing granted the program saw: %q", out)
	}
	if _, err := m.Destroy(ctx, w.ID); err != nil {
		t.Fatal(err)
	}
}
