package kube

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/sluicehq/sluice/core/errcode"
)

// The API server's errors are mapped to codes here and nowhere else.

// quotaRe finds the quota's name in the quota admission's refusal
// ("exceeded quota: NAME, requested: …").
var quotaRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`exceeded quota: ([a-z0-9.-]+)`) })

// apiError maps an API error of a verb on a resource (and object name) to a
// typed error a person can act on.
func apiError(err error, verb, resource, name string) error {
	if err == nil {
		return nil
	}
	var ce *errcode.Error
	if errors.As(err, &ce) {
		return err
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		// No answer from the server at all: refused, reset, a timeout, DNS.
		return &errcode.Error{Code: errcode.Unavailable, Msg: "the Kubernetes API server cannot be reached (" + verb + " " + resource + ")", Err: err}
	}
	status := st.Status()
	data := map[string]any{"verb": verb, "resource": resource}
	switch {
	case apierrors.IsForbidden(err) && quotaRe().MatchString(status.Message):
		q := quotaRe().FindStringSubmatch(status.Message)[1]
		data["quota"] = q
		return &errcode.Error{Code: errcode.Unavailable, Data: data, Err: err,
			Msg: fmt.Sprintf("the namespace's ResourceQuota %q refuses the run (%s); wait for other runs to end, raise the quota or lower the workspace limits", q, status.Message)}
	case apierrors.IsForbidden(err):
		return &errcode.Error{Code: errcode.Forbidden, Data: data, Err: err,
			Msg: fmt.Sprintf("Sluice's Kubernetes identity may not %s %s in the workspace namespace; grant the Role the Kubernetes runtime documents (kube.RoleYAML): %s", verb, resource, status.Message)}
	case apierrors.IsUnauthorized(err):
		return &errcode.Error{Code: errcode.Unauthorized, Data: data, Err: err,
			Msg: "the Kubernetes API server does not accept the kubeconfig's credentials; log in to the cluster again"}
	case apierrors.IsNotFound(err) && status.Details != nil && status.Details.Kind == "namespaces":
		data["namespace"] = status.Details.Name
		return &errcode.Error{Code: errcode.Unsupported, Data: data, Err: err,
			Msg: fmt.Sprintf("the Kubernetes namespace %q for workspaces does not exist; create it or configure another", status.Details.Name)}
	case apierrors.IsNotFound(err):
		return &errcode.Error{Code: errcode.NotFound, Data: data, Err: err, Msg: fmt.Sprintf("%s %s not found", resource, name)}
	case apierrors.IsInvalid(err):
		return &errcode.Error{Code: errcode.InvalidArgument, Data: data, Err: err, Msg: "the Kubernetes API server refuses the run's " + resource + ": " + status.Message}
	case retriable(err):
		return &errcode.Error{Code: errcode.Unavailable, Data: data, Err: err, Msg: fmt.Sprintf("the Kubernetes API server is unavailable (%s %s): %s", verb, resource, status.Message)}
	}
	return &errcode.Error{Code: errcode.Internal, Data: data, Err: err, Msg: fmt.Sprintf("the Kubernetes API server failed to %s %s", verb, resource)}
}

// retriable reports an error worth another try: throttling, a server
// error, or a connection that broke or was refused (an API server
// restarting).
func retriable(err error) bool {
	if err == nil {
		return false
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		code := st.Status().Code
		return code == http.StatusTooManyRequests || code >= 500 || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err)
	}
	return utilnet.IsConnectionReset(err) || utilnet.IsConnectionRefused(err) || utilnet.IsProbableEOF(err)
}

// retryAttempts and the delays bound withRetry: about 6 s in all.
const (
	retryAttempts = 6
	retryFirst    = 100 * time.Millisecond
	retryMax      = 2 * time.Second
)

// withRetry calls f until it succeeds, fails for good, or the attempts
// are spent, backing off between tries (or as long as a 429 asks).
func withRetry[T any](ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	delay := retryFirst
	for attempt := 1; ; attempt++ {
		v, err := f(ctx)
		if err == nil || !retriable(err) || attempt == retryAttempts || ctx.Err() != nil {
			return v, err
		}
		wait := delay
		if s, ok := apierrors.SuggestsClientDelay(err); ok && s > 0 {
			wait = min(time.Duration(s)*time.Second, 10*time.Second)
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(wait):
		}
		delay = min(delay*2, retryMax)
	}
}
