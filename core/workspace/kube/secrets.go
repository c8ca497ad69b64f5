package kube

// A workspace's granted secrets, kept in the cluster while they are
// granted.
//
// A node reads a run's secrets from the API server, so they must be in the
// cluster before the pod starts. They live in one Secret per workspace
// (sluice-ws-<id>-secrets, labelled as the store's and the workspace's),
// which holds exactly the granted secrets: the Manager writes it on grant,
// removes a key on revoke, deletes it when none is left and on seal and
// destroy, and brings it back in line at start-up (workspace.SecretCopies).
// A run's pod takes each granted name from it by secretKeyRef (never
// optional), so the pod spec holds no value; the run's own Secret keeps only
// what is the run's (the proxy variables, which carry its egress
// credentials). Every write is checked as the API server stored it, and a
// deletion by the object's absence.
//
// A run also makes sure the workspace's Secret holds exactly the granted
// values its spec carries before its pod is made: the spec is what the
// Manager read under the workspace's lock (and redacts from the output) or,
// for a sidecar's run, what the app's AcceptRun read from its own store
// while that lock was held (never the values the sidecar sent); a grant or
// revoke cannot happen while a run holds that lock, and the kubelet reads
// the values when it starts the container, so the program gets the values
// the run started with, as under Docker, and never a revoked one.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
	"github.com/sluicehq/sluice/core/workspace"
)

// wsSecretPrefix names every workspace's Secret (and nothing else).
const (
	wsSecretPrefix = "sluice-ws-"
	wsSecretSuffix = "-secrets"
)

// proxyEnv are the variables a granted run's proxy settings use: they carry
// the run's own egress credentials, so they stay in the run's Secret.
var proxyEnv = []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"}

var _ workspace.SecretCopies = (*Runtime)(nil)

// wsSecretName is the name of a workspace's Secret. An id that is not a
// DNS label as it stands (upper case, '_', too long) gets a digest of the
// exact id, so two ids never share a Secret.
func wsSecretName(workspaceID string) string {
	s := sanitizeName(workspaceID)
	room := 63 - len(wsSecretPrefix) - len(wsSecretSuffix)
	if s != workspaceID || len(s) > room {
		sum := sha256.Sum256([]byte(workspaceID))
		h := hex.EncodeToString(sum[:6])
		s = strings.TrimRight(s[:min(len(s), room-len(h)-1)], "-")
		if s != "" {
			s += "-"
		}
		s += h
	}
	return wsSecretPrefix + s + wsSecretSuffix
}

func isWSSecretName(name string) bool {
	return strings.HasPrefix(name, wsSecretPrefix) && strings.HasSuffix(name, wsSecretSuffix)
}

// wsSecretMeta is a workspace Secret's name, labels and annotations.
func (r *Runtime) wsSecretMeta(storeKey, workspaceID string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      wsSecretName(workspaceID),
		Namespace: r.opt.Namespace,
		Labels: map[string]string{
			workspace.LabelWorkspace: labelValue(workspaceID),
			workspace.LabelStore:     labelValue(storeKey),
			labelManagedBy:           managedBy,
		},
		Annotations: map[string]string{
			workspace.LabelWorkspace: workspaceID,
			workspace.LabelStore:     storeKey,
		},
	}
}

// checkWSIDs refuses ids no workspace Secret is named or labelled from.
func checkWSIDs(storeKey, workspaceID string) error {
	if !proposal.ValidID(workspaceID) {
		return errcode.New(errcode.InvalidArgument, "%q is not a workspace id", workspaceID)
	}
	if storeKey == "" {
		return errcode.New(errcode.InvalidArgument, "the workspace store's key is missing")
	}
	return nil
}

// ownsWSSecret reports whether a stored Secret is this store's Secret of
// the workspace: its labels and exact annotations.
func ownsWSSecret(s *corev1.Secret, want metav1.ObjectMeta) bool {
	for k, v := range want.Labels {
		if s.Labels[k] != v {
			return false
		}
	}
	for k, v := range want.Annotations {
		if s.Annotations[k] != v {
			return false
		}
	}
	return true
}

// validateWSSecret checks a workspace Secret as the API server stored it:
// this store's and this workspace's, opaque, changeable (a later revoke
// must be able to remove a key) and holding exactly values.
func validateWSSecret(s *corev1.Secret, want metav1.ObjectMeta, values map[string]string) error {
	switch {
	case s.Name != want.Name || s.Namespace != want.Namespace:
		return refusal("the workspace's Secret as stored is not %s/%s", want.Namespace, want.Name)
	case !ownsWSSecret(s, want):
		return refusal("the workspace's Secret %s as stored lacks the store's and the workspace's labels", want.Name)
	case s.Type != corev1.SecretTypeOpaque:
		return refusal("the workspace's Secret %s as stored is not Opaque", want.Name)
	case s.Immutable != nil && *s.Immutable:
		return refusal("the workspace's Secret %s as stored is immutable", want.Name)
	case len(s.StringData) > 0 || !sameData(s.Data, values):
		return refusal("the workspace's Secret %s as stored does not hold exactly the granted secrets", want.Name)
	}
	return nil
}

func sameData(data map[string][]byte, values map[string]string) bool {
	if len(data) != len(values) {
		return false
	}
	for k, v := range values {
		if d, ok := data[k]; !ok || string(d) != v {
			return false
		}
	}
	return true
}

// wsSecretWriteTries bounds PutSecrets' attempts when another writer
// changed the Secret between its read and its write.
const wsSecretWriteTries = 3

// PutSecrets implements workspace.SecretCopies: the workspace's Secret is
// made to hold exactly values (created, updated, or deleted when values is
// empty), and the result is verified as the API server stored it (the
// deletion by the Secret's absence). A Secret of that name that is not the
// store's is refused (conflict) and left alone. A Secret that already
// holds exactly values is not written. Errors are typed: an unreachable
// API server is Unavailable, a missing permission Forbidden.
func (r *Runtime) PutSecrets(ctx context.Context, storeKey, workspaceID string, values map[string]string) error {
	if err := checkWSIDs(storeKey, workspaceID); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, createWait)
	defer cancel()
	want := r.wsSecretMeta(storeKey, workspaceID)
	sc := r.cs.CoreV1().Secrets(r.opt.Namespace)
	for try := 1; ; try++ {
		cur, err := withRetry(ctx, func(ctx context.Context) (*corev1.Secret, error) {
			return sc.Get(ctx, want.Name, metav1.GetOptions{})
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return apiError(err, "get", "secrets", want.Name)
		}
		found := err == nil
		if found && !ownsWSSecret(cur, want) && len(values) == 0 {
			// Nothing of this workspace's is there to remove: the Secret
			// of the name is someone else's, and stays as it is.
			return nil
		}
		if found && !ownsWSSecret(cur, want) {
			return &errcode.Error{Code: errcode.Conflict, Data: map[string]any{"name": want.Name},
				Msg: fmt.Sprintf("a Secret named %s exists in the workspace namespace and is not this workspace's; Sluice leaves it alone and does not keep the workspace's secrets there", want.Name)}
		}
		var stored *corev1.Secret
		switch {
		case len(values) == 0 && !found:
			return nil
		case len(values) == 0:
			err = r.deleteWSSecret(ctx, cur)
			if err == nil {
				return nil
			}
		case !found:
			s := &corev1.Secret{ObjectMeta: want, Type: corev1.SecretTypeOpaque, Data: secretData(values)}
			stored, err = withRetry(ctx, func(ctx context.Context) (*corev1.Secret, error) {
				return sc.Create(ctx, s, metav1.CreateOptions{})
			})
			if apierrors.IsAlreadyExists(err) {
				err = apierrors.NewConflict(corev1.Resource("secrets"), want.Name, err)
			}
			err = apiErrorKeepConflict(err, "create", want.Name)
		case validateWSSecret(cur, want, values) == nil:
			return nil
		default:
			s := cur.DeepCopy()
			s.Labels, s.Annotations = mergeInto(s.Labels, want.Labels), mergeInto(s.Annotations, want.Annotations)
			s.Type, s.Data, s.StringData, s.Immutable = corev1.SecretTypeOpaque, secretData(values), nil, nil
			if cur.Type != corev1.SecretTypeOpaque || cur.Immutable != nil && *cur.Immutable {
				// Neither can be changed in place: the Secret is made again.
				if err = r.deleteWSSecret(ctx, cur); err == nil {
					continue
				}
				break
			}
			stored, err = withRetry(ctx, func(ctx context.Context) (*corev1.Secret, error) {
				return sc.Update(ctx, s, metav1.UpdateOptions{})
			})
			err = apiErrorKeepConflict(err, "update", want.Name)
		}
		if apierrors.IsConflict(err) && try < wsSecretWriteTries {
			continue // another writer came between the read and the write
		}
		if err != nil {
			return apiError(err, "write", "secrets", want.Name)
		}
		if verr := validateWSSecret(stored, want, values); verr != nil {
			return &errcode.Error{Code: errcode.Forbidden, Err: verr,
				Msg: "the cluster changed the workspace's Secret as it stored it (a mutating admission webhook?): " + verr.Error()}
		}
		return nil
	}
}

// apiErrorKeepConflict maps err as apiError does, but leaves a conflict as
// the API's error so that PutSecrets can read and try again.
func apiErrorKeepConflict(err error, verb, name string) error {
	if err == nil || apierrors.IsConflict(err) {
		return err
	}
	return apiError(err, verb, "secrets", name)
}

// deleteWSSecret deletes the Secret read as cur (its UID as a
// precondition, so a Secret made again meanwhile stays) and waits until it
// is gone.
func (r *Runtime) deleteWSSecret(ctx context.Context, cur *corev1.Secret) error {
	sc := r.cs.CoreV1().Secrets(r.opt.Namespace)
	uid := cur.UID
	_, err := withRetry(ctx, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, sc.Delete(ctx, cur.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	})
	if apierrors.IsConflict(err) {
		return err
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return apiError(err, "delete", "secrets", cur.Name)
	}
	return r.awaitGone(ctx, "secrets", cur.Name, func(ctx context.Context) error {
		s, err := sc.Get(ctx, cur.Name, metav1.GetOptions{})
		if err == nil && s.UID != uid {
			return apierrors.NewNotFound(corev1.Resource("secrets"), cur.Name)
		}
		return err
	})
}

func secretData(values map[string]string) map[string][]byte {
	out := make(map[string][]byte, len(values))
	for k, v := range values {
		out[k] = []byte(v)
	}
	return out
}

func mergeInto(dst, src map[string]string) map[string]string {
	if dst == nil {
		dst = map[string]string{}
	}
	maps.Copy(dst, src)
	return dst
}

// SecretCopies implements workspace.SecretCopies: the store's workspace
// Secrets, each with its workspace and the names it holds.
func (r *Runtime) SecretCopies(ctx context.Context, storeKey string) ([]workspace.SecretCopy, error) {
	if storeKey == "" {
		return nil, errcode.New(errcode.InvalidArgument, "the workspace store's key is missing")
	}
	lo := metav1.ListOptions{LabelSelector: workspace.LabelStore + "=" + labelValue(storeKey) + "," + labelManagedBy + "=" + managedBy}
	l, err := withRetry(ctx, func(ctx context.Context) (*corev1.SecretList, error) {
		return r.cs.CoreV1().Secrets(r.opt.Namespace).List(ctx, lo)
	})
	if err != nil {
		return nil, apiError(err, "list", "secrets", "")
	}
	var out []workspace.SecretCopy
	for _, s := range l.Items {
		id := s.Annotations[workspace.LabelWorkspace]
		if !isWSSecretName(s.Name) || s.Annotations[workspace.LabelStore] != storeKey || id == "" || s.Name != wsSecretName(id) {
			continue
		}
		names := slices.Collect(maps.Keys(s.Data))
		sort.Strings(names)
		out = append(out, workspace.SecretCopy{WorkspaceID: id, Names: names})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].WorkspaceID < out[j].WorkspaceID })
	return out, nil
}

// splitSecretEnv sorts a run's secret variables into the granted ones,
// which the workspace's Secret holds, and the run's own (proxy settings).
func splitSecretEnv(secretEnv []string) (granted, own []string) {
	for _, n := range secretEnv {
		if slices.Contains(proxyEnv, n) {
			own = append(own, n)
		} else {
			granted = append(granted, n)
		}
	}
	return granted, own
}

// grantedValues are the values of spec's granted secrets, from its Env.
func grantedValues(spec workspace.ContainerSpec) map[string]string {
	granted, _ := splitSecretEnv(spec.SecretEnv)
	out := map[string]string{}
	for _, kv := range spec.Env {
		k, v, _ := strings.Cut(kv, "=")
		if slices.Contains(granted, k) {
			out[k] = v
		}
	}
	return out
}
