package kube

import (
	"context"
	"errors"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace"
	"github.com/sluicehq/sluice/core/workspace/kube/kubetest"
)

// TestPutSecrets_FollowsTheGrants: a workspace's Secret is made on the
// first grant with the store's and the workspace's labels, holds exactly
// the granted values after each change (the same object, updated), is not
// written when it already holds them, loses a revoked key, and is deleted
// (verified) when none is left; SecretCopies lists it.
func TestPutSecrets_FollowsTheGrants(t *testing.T) {
	p := newOnPlane(t, Options{})
	ns, cs, r := p.ns, p.cs, p.r
	ctx := context.Background()
	spec := testSpec(t, fakeImage) // its ids and store key
	get := func() *corev1.Secret {
		t.Helper()
		s, err := cs.CoreV1().Secrets(ns).Get(ctx, wsSecretName(spec.WorkspaceID), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	one := map[string]string{"A_TOKEN": "value-a-1234"}
	if err := r.PutSecrets(ctx, spec.StoreKey, spec.WorkspaceID, one); err != nil {
		t.Fatal(err)
	}
	first := get()
	checkWSSecretShape(t, first, spec, one)
	two := map[string]string{"A_TOKEN": "value-a-1234", "B_TOKEN": "value-b-5678"}
	if err := r.PutSecrets(ctx, spec.StoreKey, spec.WorkspaceID, two); err != nil {
		t.Fatal(err)
	}
	second := get()
	checkWSSecretShape(t, second, spec, two)
	if second.UID != first.UID {
		t.Fatal("a grant made the workspace's Secret again instead of updating it")
	}
	if err := r.PutSecrets(ctx, spec.StoreKey, spec.WorkspaceID, two); err != nil {
		t.Fatal(err)
	}
	if again := get(); again.ResourceVersion != second.ResourceVersion {
		t.Fatal("a Secret that already held the grants was written again")
	}
	copies, err := r.SecretCopies(ctx, spec.StoreKey)
	if err != nil || len(copies) != 1 || copies[0].WorkspaceID != spec.WorkspaceID || !slices.Equal(copies[0].Names, []string{"A_TOKEN", "B_TOKEN"}) {
		t.Fatalf("SecretCopies: %+v %v", copies, err)
	}
	if other, err := r.SecretCopies(ctx, "another-store"); err != nil || len(other) != 0 {
		t.Fatalf("another store's SecretCopies: %+v %v", other, err)
	}
	// Revoke A: the key goes, B stays.
	b := map[string]string{"B_TOKEN": "value-b-5678"}
	if err := r.PutSecrets(ctx, spec.StoreKey, spec.WorkspaceID, b); err != nil {
		t.Fatal(err)
	}
	checkWSSecretShape(t, get(), spec, b)
	// Revoke B: nothing is left, the Secret goes.
	if err := r.PutSecrets(ctx, spec.StoreKey, spec.WorkspaceID, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets(ns).Get(ctx, wsSecretName(spec.WorkspaceID), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the workspace's Secret after the last revoke: %v", err)
	}
	if err := r.PutSecrets(ctx, spec.StoreKey, spec.WorkspaceID, nil); err != nil {
		t.Fatalf("revoking again: %v", err)
	}
	assertNothingLabelled(t, cs, ns)

	// Workspace ids that are no DNS label keep Secrets apart.
	if wsSecretName("Ab_c") == wsSecretName("ab-c") || len(wsSecretName(strings.Repeat("x", 128))) > 63 {
		t.Fatalf("workspace Secret names: %s %s %s", wsSecretName("Ab_c"), wsSecretName("ab-c"), wsSecretName(strings.Repeat("x", 128)))
	}
	wantCode(t, r.PutSecrets(ctx, spec.StoreKey, "../x", one), errcode.InvalidArgument)
}

// TestPutSecrets_FailurePaths: a Secret of the name that is not the
// store's refuses a grant, is nothing to remove for a revoke, and is
// left alone; an identity without "update secrets"
// cannot change a grant, one without "create secrets" cannot make the
// first; an unreachable API server is Unavailable.
func TestPutSecrets_FailurePaths(t *testing.T) {
	p := newOnPlane(t, Options{})
	admin, ns, cs, r := p.cfg, p.ns, p.cs, p.r
	ctx := context.Background()
	spec := testSpec(t, fakeImage)
	someone := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: wsSecretName(spec.WorkspaceID)}, Data: map[string][]byte{"X": []byte("theirs")}}
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, someone, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A grant through it is refused; removing what is granted finds
	// nothing of the workspace's there and is done, the Secret untouched
	// (a removal that always failed would keep every run of the store
	// waiting for it).
	wantCode(t, r.PutSecrets(ctx, spec.StoreKey, spec.WorkspaceID, map[string]string{"A_TOKEN": "value-a-1234"}), errcode.Conflict, "not this workspace's")
	if err := r.PutSecrets(ctx, spec.StoreKey, spec.WorkspaceID, nil); err != nil {
		t.Fatalf("removing the workspace's copy where only someone else's Secret is: %v", err)
	}
	if got, err := cs.CoreV1().Secrets(ns).Get(ctx, someone.Name, metav1.GetOptions{}); err != nil || string(got.Data["X"]) != "theirs" || len(got.Data) != 1 {
		t.Fatalf("someone else's Secret was touched: %v", err)
	}

	noUpdate := newRuntime(t, restrictedConfig(t, admin, ns, "update secrets"), Options{Namespace: ns})
	other := testSpec(t, fakeImage)
	if err := noUpdate.PutSecrets(ctx, other.StoreKey, other.WorkspaceID, map[string]string{"A_TOKEN": "value-a-1234"}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, noUpdate.PutSecrets(ctx, other.StoreKey, other.WorkspaceID, map[string]string{"A_TOKEN": "value-a-other"}), errcode.Forbidden, "update secrets", "RoleYAML")
	got, err := cs.CoreV1().Secrets(ns).Get(ctx, wsSecretName(other.WorkspaceID), metav1.GetOptions{})
	if err != nil || string(got.Data["A_TOKEN"]) != "value-a-1234" {
		t.Fatalf("a refused update changed the Secret: %v", err)
	}
	ns2 := kubetest.Namespace(t, admin) // a Role of its own
	noCreate := newRuntime(t, restrictedConfig(t, admin, ns2, "create secrets"), Options{Namespace: ns2})
	third := testSpec(t, fakeImage)
	wantCode(t, noCreate.PutSecrets(ctx, third.StoreKey, third.WorkspaceID, map[string]string{"A_TOKEN": "value-a-1234"}), errcode.Forbidden, "create secrets")
	assertNothingLabelled(t, cs, ns2)

	down := rest.CopyConfig(admin)
	down.Host = "https://127.0.0.1:1"
	wantCode(t, newRuntime(t, down, Options{Namespace: ns}).PutSecrets(ctx, third.StoreKey, third.WorkspaceID, map[string]string{"A_TOKEN": "value-a-1234"}), errcode.Unavailable, "cannot be reached")
	if _, err := cs.CoreV1().Secrets(ns).Get(ctx, wsSecretName(third.WorkspaceID), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a refused grant left a Secret: %v", err)
	}
	if err := cs.CoreV1().Secrets(ns).Delete(ctx, someone.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	revokeGrants(t, admin, ns)
	assertNothingLabelled(t, cs, ns)
}

// kubeManager opens a workspace store on state and conf with the runtime
// r (nil: none) and copies.
func kubeManager(t *testing.T, state, conf string, r *Runtime, copies workspace.SecretCopies) *workspace.Manager {
	t.Helper()
	o := workspace.Options{StateDir: state, ConfigDir: conf, Image: fakeImage, SecretCopies: copies}
	if r != nil {
		o.Runtime = r
	}
	m, err := workspace.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func privateDirs(t *testing.T) (string, string) {
	t.Helper()
	state, conf := t.TempDir(), t.TempDir()
	for _, d := range []string{state, conf} {
		if err := os.Chmod(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return state, conf
}

// TestManager_SecretCopyFollowsGrantRevokeSealDestroy: a Manager on the
// Kubernetes runtime keeps the workspace's Secret to exactly its grants:
// made on grant, a key gone on revoke, deleted on seal and on destroy.
func TestManager_SecretCopyFollowsGrantRevokeSealDestroy(t *testing.T) {
	p := newOnPlane(t, Options{})
	ns, cs, r := p.ns, p.cs, p.r
	ctx := context.Background()
	state, conf := privateDirs(t)
	m := kubeManager(t, state, conf, r, nil)
	data := func(id string) map[string]string {
		t.Helper()
		s, err := cs.CoreV1().Secrets(ns).Get(ctx, wsSecretName(id), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for k, v := range s.Data {
			out[k] = string(v)
		}
		return out
	}
	want := func(id string, w map[string]string) {
		t.Helper()
		if got := data(id); len(got) != len(w) || !sameData(secretData(got), w) {
			t.Fatalf("the workspace's Secret holds %v, want %v", got, w)
		}
	}
	for _, end := range []string{"seal", "destroy"} {
		w, err := m.Create(ctx, workspace.CreateRequest{Source: workspace.Source{Kind: workspace.SourceFresh, GitInit: true}, Agent: "test"})
		if err != nil {
			t.Fatal(err)
		}
		want(w.ID, nil)
		if err := m.Grant(w.ID, "A_TOKEN", "value-a-1234"); err != nil {
			t.Fatal(err)
		}
		if err := m.Grant(w.ID, "B_TOKEN", "value-b-5678"); err != nil {
			t.Fatal(err)
		}
		want(w.ID, map[string]string{"A_TOKEN": "value-a-1234", "B_TOKEN": "value-b-5678"})
		if err := m.Grant(w.ID, "B_TOKEN", "value-b-changed"); err != nil {
			t.Fatal(err)
		}
		if rev, err := m.RevokeSecret(w.ID, "A_TOKEN"); err != nil || rev.CopyLeft {
			t.Fatalf("RevokeSecret: %+v %v", rev, err)
		}
		want(w.ID, map[string]string{"B_TOKEN": "value-b-changed"})
		switch end {
		case "seal":
			res, err := m.Seal(ctx, w.ID, "")
			if err != nil || res.Refused {
				t.Fatalf("Seal: %+v %v", res, err)
			}
			want(w.ID, nil)
			if _, err := m.Destroy(ctx, w.ID); err != nil {
				t.Fatal(err)
			}
		case "destroy":
			rep, err := m.Destroy(ctx, w.ID)
			if err != nil || !rep.ContainersGone || rep.ContainersRemoved != 1 {
				t.Fatalf("Destroy: %+v %v", rep, err)
			}
			want(w.ID, nil)
		}
	}
	assertNothingLabelled(t, cs, ns)
}

// TestManager_SecretCopyFailures: with the cluster unreachable or refusing,
// a grant fails and is not recorded; a revoke happens here, says the
// cluster's copy is left, and the copy goes before the next run (no run
// starts while it cannot) and at start-up, which also removes the copy of a
// workspace that is gone and a key no longer granted.
func TestManager_SecretCopyFailures(t *testing.T) {
	p := newOnPlane(t, Options{})
	admin, ns, cs, r := p.cfg, p.ns, p.cs, p.r
	ctx := context.Background()
	down := rest.CopyConfig(admin)
	down.Host = "https://127.0.0.1:1"
	rDown := newRuntime(t, down, Options{Namespace: ns})
	rNoUpdate := newRuntime(t, restrictedConfig(t, admin, ns, "update secrets"), Options{Namespace: ns})
	state, conf := privateDirs(t)
	m := kubeManager(t, state, conf, r, nil)
	mDown := kubeManager(t, state, conf, rDown, nil)
	mNoUpdate := kubeManager(t, state, conf, nil, rNoUpdate) // the runtime unopened, its copies still kept
	secretOf := func(id string) *corev1.Secret {
		t.Helper()
		s, err := cs.CoreV1().Secrets(ns).Get(ctx, wsSecretName(id), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	w, err := m.Create(ctx, workspace.CreateRequest{Source: workspace.Source{Kind: workspace.SourceFresh, GitInit: true}, Agent: "test"})
	if err != nil {
		t.Fatal(err)
	}
	granted := func() []string {
		t.Helper()
		got, err := m.Get(w.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.Secrets
	}

	// Grants that cannot reach the copy are not made.
	wantCode(t, mDown.Grant(w.ID, "A_TOKEN", "value-a-1234"), errcode.Unavailable, "not granted", "cannot be reached")
	if len(granted()) != 0 || secretOf(w.ID) != nil {
		t.Fatalf("an unreachable cluster's grant was recorded: %v", granted())
	}
	if err := m.Grant(w.ID, "A_TOKEN", "value-a-1234"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, mNoUpdate.Grant(w.ID, "B_TOKEN", "value-b-5678"), errcode.Forbidden, "not granted", "update secrets")
	if !slices.Equal(granted(), []string{"A_TOKEN"}) || !sameData(secretOf(w.ID).Data, map[string]string{"A_TOKEN": "value-a-1234"}) {
		t.Fatalf("a forbidden grant was recorded: %v", granted())
	}

	// A revoke the cluster does not hear of happens here, and says so.
	rev, err := mDown.RevokeSecret(w.ID, "A_TOKEN")
	if err != nil || !rev.CopyLeft || !strings.Contains(rev.Reason, "cannot be reached") {
		t.Fatalf("RevokeSecret with the cluster down: %+v %v", rev, err)
	}
	if len(granted()) != 0 || secretOf(w.ID) == nil {
		t.Fatalf("the revoke: granted %v, copy %v", granted(), secretOf(w.ID))
	}
	// No run starts while the copy cannot be removed.
	_, err = mDown.Run(ctx, w.ID, workspace.RunRequest{Argv: []string{"true"}})
	wantCode(t, err, errcode.Unavailable, "no run of this workspace starts while its revoked secret")
	if err := mDown.SyncSecretCopies(ctx); err == nil {
		t.Fatal("SyncSecretCopies with the cluster down reports nothing")
	}
	// The next run of any workspace removes it before it starts: here
	// another workspace's, whose pod never starts on a control plane.
	other, err := m.Create(ctx, workspace.CreateRequest{Source: workspace.Source{Kind: workspace.SourceFresh}, Agent: "test"})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := m.Run(rctx, other.ID, workspace.RunRequest{Argv: []string{"true"}})
		done <- err
	}()
	waitFor(t, "the other workspace's run's pod", func() bool {
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 1
	})
	if s := secretOf(w.ID); s != nil {
		t.Fatalf("a run started while the revoked secret's copy is still there: %v", keys(s.Data))
	}
	cancel()
	if err := <-done; !errcode.IsCode(err, errcode.Timeout) {
		t.Fatalf("the cancelled run: %v", err)
	}
	if err := m.SyncSecretCopies(ctx); err != nil {
		t.Fatalf("SyncSecretCopies with nothing left to do: %v", err)
	}
	if _, err := m.Destroy(ctx, other.ID); err != nil {
		t.Fatal(err)
	}

	// Start-up: the copy of a workspace that is gone goes, a key no longer
	// granted goes, a grant without a copy gets one; a revoke whose copy
	// was left is finished.
	if err := m.Grant(w.ID, "B_TOKEN", "value-b-5678"); err != nil {
		t.Fatal(err)
	}
	if err := r.PutSecrets(ctx, m.StoreKey(), w.ID, map[string]string{"B_TOKEN": "value-b-5678", "OLD_TOKEN": "value-old-1234"}); err != nil {
		t.Fatal(err)
	}
	if err := r.PutSecrets(ctx, m.StoreKey(), "gone-workspace", map[string]string{"C_TOKEN": "value-c-1234"}); err != nil {
		t.Fatal(err)
	}
	w2, err := m.Create(ctx, workspace.CreateRequest{Source: workspace.Source{Kind: workspace.SourceFresh}, Agent: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Grant(w2.ID, "D_TOKEN", "value-d-1234"); err != nil {
		t.Fatal(err)
	}
	if rev, err := mDown.RevokeSecret(w2.ID, "D_TOKEN"); err != nil || !rev.CopyLeft {
		t.Fatalf("RevokeSecret with the cluster down: %+v %v", rev, err)
	}
	fresh := kubeManager(t, state, conf, r, nil)
	rep, err := fresh.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s := secretOf(w.ID); s == nil || !sameData(s.Data, map[string]string{"B_TOKEN": "value-b-5678"}) {
		t.Fatalf("after Reconcile the workspace's copy is %v", s)
	}
	if secretOf("gone-workspace") != nil || secretOf(w2.ID) != nil {
		t.Fatal("after Reconcile a gone workspace's copy or a revoked one is left")
	}
	if !slices.Contains(rep.SecretCopiesSynced, w.ID) || !slices.Contains(rep.SecretCopiesSynced, w2.ID) {
		t.Fatalf("Reconcile's report: %+v", rep)
	}
	if _, err := fresh.Destroy(ctx, w.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Destroy(ctx, w2.ID); err != nil {
		t.Fatal(err)
	}
	assertNothingLabelled(t, cs, ns)
}

// TestManager_RunSeesOnlyWhatWasGrantedWhenItStarted: a run's pod takes
// from the workspace's Secret exactly the names granted when the run
// started (a name revoked before is neither in the pod nor in the Secret),
// and while the run goes on no grant can change them: the workspace is
// locked, as under Docker, where a container's environment is fixed when
// it is made.
func TestManager_RunSeesOnlyWhatWasGrantedWhenItStarted(t *testing.T) {
	p := newOnPlane(t, Options{})
	ns, cs, r := p.ns, p.cs, p.r
	ctx := context.Background()
	state, conf := privateDirs(t)
	m := kubeManager(t, state, conf, r, nil)
	w, err := m.Create(ctx, workspace.CreateRequest{Source: workspace.Source{Kind: workspace.SourceFresh}, Agent: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"A_TOKEN", "B_TOKEN"} {
		if err := m.Grant(w.ID, n, "value-of-"+n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.RevokeSecret(w.ID, "A_TOKEN"); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := m.Run(rctx, w.ID, workspace.RunRequest{Argv: []string{"true"}})
		done <- err
	}()
	// Only a control plane: the pod is made and never starts.
	var pod *corev1.Pod
	waitFor(t, "the run's pod", func() bool {
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(l.Items) == 0 {
			return false
		}
		pod = &l.Items[0]
		return true
	})
	var names []string
	for _, e := range pod.Spec.Containers[1].Env {
		if e.ValueFrom != nil {
			names = append(names, e.Name+"<-"+e.ValueFrom.SecretKeyRef.Name)
		}
	}
	if !slices.Equal(names, []string{"B_TOKEN<-" + wsSecretName(w.ID)}) {
		t.Fatalf("the run's pod takes %v", names)
	}
	s, err := cs.CoreV1().Secrets(ns).Get(ctx, wsSecretName(w.ID), metav1.GetOptions{})
	if err != nil || !sameData(s.Data, map[string]string{"B_TOKEN": "value-of-B_TOKEN"}) {
		t.Fatalf("the workspace's Secret during the run: %v", err)
	}
	err = m.Grant(w.ID, "C_TOKEN", "value-of-C")
	if !errors.Is(err, workspace.ErrLocked) {
		t.Fatalf("a grant during a run: %v", err)
	}
	_, err = m.RevokeSecret(w.ID, "B_TOKEN")
	if !errors.Is(err, workspace.ErrLocked) {
		t.Fatalf("a revoke during a run: %v", err)
	}
	cancel()
	if err := <-done; !errcode.IsCode(err, errcode.Timeout) {
		t.Fatalf("the cancelled run: %v", err)
	}
	if _, err := m.Destroy(ctx, w.ID); err != nil {
		t.Fatal(err)
	}
	assertNothingLabelled(t, cs, ns)
}

// TestPutSecrets_StoredDifferentlyIsRefused: a workspace's Secret the
// cluster stores otherwise than it was sent (a mutating webhook adding a
// key, here a proxy changing the body on its way) is refused, and a grant
// through it is not recorded.
func TestPutSecrets_StoredDifferentlyIsRefused(t *testing.T) {
	p := newOnPlane(t, Options{})
	admin, ns := p.cfg, p.ns
	r := newRuntime(t, proxiedConfig(t, admin, func(w http.ResponseWriter, req *http.Request, upstream http.Handler) {
		if (req.Method == http.MethodPost || req.Method == http.MethodPut) && strings.Contains(req.URL.Path, "/secrets") {
			var s corev1.Secret
			if !rewriteJSON(w, req, &s, func() { s.Data["INJECTED"] = []byte("by-the-cluster") }) {
				return
			}
		}
		upstream.ServeHTTP(w, req)
	}), Options{Namespace: ns})
	ctx := context.Background()
	spec := testSpec(t, fakeImage)
	wantCode(t, r.PutSecrets(ctx, spec.StoreKey, spec.WorkspaceID, map[string]string{"A_TOKEN": "value-a-1234"}), errcode.Forbidden, "changed the workspace's Secret")

	state, conf := privateDirs(t)
	m := kubeManager(t, state, conf, r, nil)
	w, err := m.Create(ctx, workspace.CreateRequest{Source: workspace.Source{Kind: workspace.SourceFresh}, Agent: "test"})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, m.Grant(w.ID, "A_TOKEN", "value-a-1234"), errcode.Forbidden, "not granted")
	if got, err := m.Get(w.ID); err != nil || len(got.Secrets) != 0 {
		t.Fatalf("a grant the cluster stored otherwise was recorded: %+v %v", got, err)
	}
	revokeGrants(t, admin, ns)
	assertNothingLabelled(t, p.cs, ns)
}

// runtimeOnly is the Kubernetes runtime seen as a sidecar's Manager sees
// the app's (gateway.Runtime): containers only, no secret copies.
type runtimeOnly struct{ workspace.Runtime }

// TestManager_SidecarSealAndDestroyRemoveTheCopy: a Manager that keeps no
// copies itself (a sidecar's, whose runs and containers go through the
// app) still deletes the workspace's Secret when its agent seals or
// destroys the workspace: the runtime lists it as kept, and it is removed
// and verified gone like a container. Its start-up sweep leaves a copy it
// cannot change to the app instead of failing.
func TestManager_SidecarSealAndDestroyRemoveTheCopy(t *testing.T) {
	p := newOnPlane(t, Options{})
	ns, cs, r := p.ns, p.cs, p.r
	ctx := context.Background()
	state, conf := privateDirs(t)
	app := kubeManager(t, state, conf, r, nil)
	side, err := workspace.Open(workspace.Options{StateDir: state, ConfigDir: conf, Image: fakeImage, Runtime: runtimeOnly{r}})
	if err != nil {
		t.Fatal(err)
	}
	defer side.Close()
	present := func(id string) bool {
		t.Helper()
		_, err := cs.CoreV1().Secrets(ns).Get(ctx, wsSecretName(id), metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	for _, end := range []string{"seal", "destroy"} {
		w, err := side.Create(ctx, workspace.CreateRequest{Source: workspace.Source{Kind: workspace.SourceFresh, GitInit: true}, Agent: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if err := app.Grant(w.ID, "A_TOKEN", "value-a-1234"); err != nil {
			t.Fatal(err)
		}
		if !present(w.ID) {
			t.Fatal("the grant made no Secret")
		}
		// A mark the sidecar cannot act on (the copy must change, not go)
		// is left to the app.
		other, err := side.Create(ctx, workspace.CreateRequest{Source: workspace.Source{Kind: workspace.SourceFresh}, Agent: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if err := app.Grant(other.ID, "B_TOKEN", "value-b-1234"); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(state+"/workspaces/.secret-copies/"+other.ID, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := side.Reconcile(ctx); err != nil {
			t.Fatalf("the sidecar's Reconcile with a copy only the app can change: %v", err)
		}
		if !present(w.ID) || !present(other.ID) {
			t.Fatal("the sidecar's Reconcile removed a living workspace's Secret")
		}
		switch end {
		case "seal":
			if res, err := side.Seal(ctx, w.ID, ""); err != nil || res.Refused {
				t.Fatalf("Seal: %+v %v", res, err)
			}
			if present(w.ID) {
				t.Fatal("the sidecar's seal left the workspace's Secret")
			}
			if _, err := side.Destroy(ctx, w.ID); err != nil {
				t.Fatal(err)
			}
		case "destroy":
			rep, err := side.Destroy(ctx, w.ID)
			if err != nil || rep.ContainersRemoved != 1 || !rep.ContainersGone {
				t.Fatalf("Destroy: %+v %v", rep, err)
			}
			if present(w.ID) {
				t.Fatal("the sidecar's destroy left the workspace's Secret")
			}
		}
		if _, err := app.Destroy(ctx, other.ID); err != nil {
			t.Fatal(err)
		}
	}
	if err := app.SyncSecretCopies(ctx); err != nil {
		t.Fatal(err)
	}
	if marks, _ := os.ReadDir(state + "/workspaces/.secret-copies"); len(marks) != 0 {
		t.Fatalf("marks left: %v", marks)
	}
	assertNothingLabelled(t, cs, ns)
}

// TestManager_RevokeOfAnUngrantedNameChangesNothing: revoking a name that
// was never granted is ErrSecretNotGranted (not_found, the name in its
// data), writes nothing in the store, leaves no mark and calls the
// cluster not at all; a store without a cluster (the Docker Engine's, or
// none) answers the same.
func TestManager_RevokeOfAnUngrantedNameChangesNothing(t *testing.T) {
	p := newOnPlane(t, Options{})
	ns, cs, r := p.ns, p.cs, p.r
	ctx := context.Background()
	copies := &countingCopies{Runtime: r, puts: map[string]int{}}
	state, conf := privateDirs(t)
	onCluster := kubeManager(t, state, conf, r, copies)
	bareState, bareConf := privateDirs(t)
	bare := kubeManager(t, bareState, bareConf, nil, nil)
	for name, m := range map[string]*workspace.Manager{"on a cluster": onCluster, "without one": bare} {
		w, err := m.Create(ctx, workspace.CreateRequest{Source: workspace.Source{Kind: workspace.SourceFresh}, Agent: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Grant(w.ID, "A_TOKEN", "value-a-1234"); err != nil {
			t.Fatal(err)
		}
		before, err := m.Get(w.ID)
		if err != nil {
			t.Fatal(err)
		}
		puts := copies.count(w.ID)
		version := func() string {
			t.Helper()
			s, err := cs.CoreV1().Secrets(ns).Get(ctx, wsSecretName(w.ID), metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return "none"
			}
			if err != nil {
				t.Fatal(err)
			}
			return s.ResourceVersion
		}
		stored := version()
		rev, err := m.RevokeSecret(w.ID, "NEVER_GRANTED")
		if !errors.Is(err, workspace.ErrSecretNotGranted) || rev != (workspace.SecretRevocation{}) {
			t.Fatalf("%s: revoking a name never granted: %+v %v", name, rev, err)
		}
		if e, _ := errcode.As(err); e.Code != errcode.NotFound || e.Data.(map[string]string)["name"] != "NEVER_GRANTED" {
			t.Fatalf("%s: the error %+v", name, e)
		}
		after, err := m.Get(w.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(after.Secrets, []string{"A_TOKEN"}) || !after.LastUsedAt.Equal(before.LastUsedAt) {
			t.Fatalf("%s: the workspace after the refused revoke: %v, last used %v (was %v)", name, after.Secrets, after.LastUsedAt, before.LastUsedAt)
		}
		if err := m.SyncSecretCopies(ctx); err != nil {
			t.Fatal(err)
		}
		if n := copies.count(w.ID) - puts; n != 0 {
			t.Fatalf("%s: the refused revoke, and the sync after it, wrote the cluster's copy %d times", name, n)
		}
		if now := version(); now != stored {
			t.Fatalf("%s: the workspace's Secret changed (version %s, was %s)", name, now, stored)
		}
		if _, err := m.Destroy(ctx, w.ID); err != nil {
			t.Fatal(err)
		}
	}
	assertNothingLabelled(t, cs, ns)
}
