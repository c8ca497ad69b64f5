package kube

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace/kube/kubetest"
)

// TestRun_RefusesAPodTheClusterChanged: a real mutating admission webhook
// (the API server calls it over TLS) adds a hostPath volume to every pod
// in the namespace. The pod Sluice sent passes its check; the pod the API
// server stored does not, so the run is refused and everything deleted.
func TestRun_RefusesAPodTheClusterChanged(t *testing.T) {
	cfg := kubetest.ControlPlane(t)
	ns := kubetest.Namespace(t, cfg)
	cs := adminClient(t, cfg)
	ctx := context.Background()
	patch := `[{"op":"add","path":"/spec/volumes/-","value":{"name":"host","hostPath":{"path":"/"}}}]`
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var rev admissionv1.AdmissionReview
		if err := json.Unmarshal(body, &rev); err != nil || rev.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		pt := admissionv1.PatchTypeJSONPatch
		rev.Response = &admissionv1.AdmissionResponse{UID: rev.Request.UID, Allowed: true, Patch: []byte(patch), PatchType: &pt}
		rev.Request = nil
		_ = json.NewEncoder(w).Encode(rev)
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	url := srv.URL + "/mutate"
	none := admissionregistrationv1.SideEffectClassNone
	fail := admissionregistrationv1.Fail
	hook := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "sluice-test-" + ns},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "inject.sluice.test",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			SideEffects:             &none,
			FailurePolicy:           &fail,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, hook, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), hook.Name, metav1.DeleteOptions{})
	})
	r := newRuntime(t, cfg, Options{Namespace: ns})
	_, err := r.Run(ctx, testSpec(t, fakeImage), &limitBuffer{max: 1}, &limitBuffer{max: 1})
	wantCode(t, err, errcode.Forbidden, "changed the run's pod", "emptyDir")
	revokeGrants(t, cfg, ns)
	assertNothingLabelled(t, cs, ns)
}
