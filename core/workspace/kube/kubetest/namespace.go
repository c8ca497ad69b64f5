package kubetest

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

var getOpts metav1.GetOptions

// Namespace creates a namespace named after the test, waits for its default
// service account (pods are refused without it) and deletes the namespace
// when the test ends.
func Namespace(t testing.TB, cfg *rest.Config) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: namespacePrefix(t.Name())},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("kubetest: creating a namespace: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("kubetest: deleting namespace %s: %v", ns.Name, err)
		}
	})
	// The controller manager makes the account; the minute is a backstop.
	for {
		if _, err := cs.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", getOpts); err == nil {
			return ns.Name
		}
		select {
		case <-ctx.Done():
			t.Fatalf("kubetest: namespace %s got no default service account (is the controller manager running?)", ns.Name)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// namespacePrefix is "kt-" and the test's name as a DNS label, short enough
// for the five characters GenerateName adds.
func namespacePrefix(name string) string {
	var b strings.Builder
	b.WriteString("kt-")
	dash := true
	for _, r := range strings.ToLower(name) {
		if b.Len() >= 50 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.TrimRight(b.String(), "-")
	return s + "-"
}
