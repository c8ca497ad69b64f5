package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/sluicehq/sluice/core/errcode"
)

// watchTimeout is how long one watch request may last before the API
// server ends it; watchPod then watches again from where it was. A
// variable so that a test can make the server end watches often.
var watchTimeout int64 = 300

// watchStarts counts watch requests (tests see re-established watches).
var watchStarts atomic.Int64

// errPodGone is a run's pod that was deleted under a watch.
var errPodGone = errors.New("the run's pod was deleted")

// watchPod follows the run's pod until cond says done (or fails). It lists
// once, then watches from that list's resourceVersion; a watch the server
// ends is re-established from the last version seen, and one whose version
// is too old (expired, 410 Gone) starts over from a fresh list, so no
// change is missed whatever the server does.
func (r *Runtime) watchPod(ctx context.Context, name string, cond func(*corev1.Pod) (bool, error)) (*corev1.Pod, error) {
	pods := r.cs.CoreV1().Pods(r.opt.Namespace)
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	rv := ""
	var last *corev1.Pod
	for {
		if rv == "" {
			list, err := withRetry(ctx, func(ctx context.Context) (*corev1.PodList, error) {
				return pods.List(ctx, metav1.ListOptions{FieldSelector: sel})
			})
			if err != nil {
				return last, ctxOr(ctx, apiError(err, "list", "pods", name))
			}
			if len(list.Items) == 0 {
				return last, errPodGone
			}
			last = &list.Items[0]
			if done, err := cond(last); done || err != nil {
				return last, err
			}
			rv = list.ResourceVersion
		}
		to := watchTimeout
		watchStarts.Add(1)
		w, err := withRetry(ctx, func(ctx context.Context) (watch.Interface, error) {
			return pods.Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: rv, TimeoutSeconds: &to, AllowWatchBookmarks: true})
		})
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			rv = ""
			continue
		}
		if err != nil {
			return last, ctxOr(ctx, apiError(err, "watch", "pods", name))
		}
		p, nextRV, done, err := consumeWatch(ctx, w, rv, cond)
		w.Stop()
		if p != nil {
			last = p
		}
		if done || err != nil {
			return last, err
		}
		rv = nextRV
	}
}

// consumeWatch reads one watch until it ends. It returns the pod last seen,
// the resourceVersion to watch from next ("" to list again), and cond's
// answer.
func consumeWatch(ctx context.Context, w watch.Interface, rv string, cond func(*corev1.Pod) (bool, error)) (*corev1.Pod, string, bool, error) {
	var last *corev1.Pod
	for {
		select {
		case <-ctx.Done():
			return last, rv, false, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return last, rv, false, nil
			}
			switch ev.Type {
			case watch.Error:
				err := apierrors.FromObject(ev.Object)
				if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					return last, "", false, nil
				}
				if retriable(err) {
					return last, rv, false, nil
				}
				return last, rv, false, apiError(err, "watch", "pods", "")
			case watch.Bookmark:
				if m, err := metaOf(ev.Object); err == nil {
					rv = m
				}
			case watch.Deleted:
				return last, rv, false, errPodGone
			case watch.Added, watch.Modified:
				p, ok := ev.Object.(*corev1.Pod)
				if !ok {
					continue
				}
				last, rv = p, p.ResourceVersion
				if done, err := cond(p); done || err != nil {
					return last, rv, done, err
				}
			}
		}
	}
}

func metaOf(o any) (string, error) {
	if p, ok := o.(*corev1.Pod); ok {
		return p.ResourceVersion, nil
	}
	return "", fmt.Errorf("unexpected bookmark object %T", o)
}

// ctxOr prefers ctx's own error to the one a cancelled request gave.
func ctxOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// containerStatus is the named container's status, or nil.
func containerStatus(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// imageWaitReasons are the kubelet's reasons for a container that waits
// on its image.
var imageWaitReasons = map[string]string{
	"ErrImagePull":      "cannot be pulled",
	"ImagePullBackOff":  "cannot be pulled",
	"ErrImageNeverPull": "is not present on the node, and the pull policy is Never",
	"InvalidImageName":  "is not a valid image name",
}

// configWaitReasons are reasons for a container the kubelet cannot create.
var configWaitReasons = map[string]bool{"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true}

// podFailure is a typed error for a pod that failed as a whole (evicted,
// past its deadline), or nil.
func podFailure(p *corev1.Pod) error {
	if p.Status.Phase != corev1.PodFailed {
		return nil
	}
	data := map[string]any{"pod": p.Name, "reason": p.Status.Reason}
	switch p.Status.Reason {
	case "Evicted":
		return &errcode.Error{Code: errcode.Unavailable, Data: data,
			Msg: "the node evicted the run's pod: " + p.Status.Message}
	case "DeadlineExceeded":
		return &errcode.Error{Code: errcode.Timeout, Data: data,
			Msg: "the run's pod ran past its active deadline (the backstop for the run's timeout) and was stopped by the node"}
	}
	return &errcode.Error{Code: errcode.Internal, Data: data,
		Msg: strings.TrimSpace("the run's pod failed: " + p.Status.Reason + " " + p.Status.Message)}
}

// errNoPIDLimit is in the chain of the error of a pod whose PID limit
// could not be set (see pidLimitScript).
var errNoPIDLimit = errors.New("the pod's PID limit could not be set")

// startFailure is a typed error for a container that cannot start, naming
// the image where the image is the reason, or nil.
func startFailure(p *corev1.Pod, image string) error {
	for _, c := range p.Spec.Containers {
		name := c.Name
		cs := containerStatus(p, name)
		if cs == nil {
			continue
		}
		if w := cs.State.Waiting; w != nil {
			if what, ok := imageWaitReasons[w.Reason]; ok {
				return &errcode.Error{Code: errcode.Unsupported, Data: map[string]any{"image": image, "reason": w.Reason},
					Msg: fmt.Sprintf("the workspace image %s %s (%s: %s); load it onto the cluster's nodes or change the configured image", image, what, w.Reason, w.Message)}
			}
			if configWaitReasons[w.Reason] {
				return &errcode.Error{Code: errcode.Internal, Data: map[string]any{"container": name, "reason": w.Reason},
					Msg: fmt.Sprintf("the node cannot create the run's %s container (%s: %s)", name, w.Reason, w.Message)}
			}
		}
		if t := cs.State.Terminated; t != nil && t.ExitCode == exitNoPIDLimit && name != containerKeeper {
			// Sluice's first step could not set the pod's PID limit
			// (pidLimitScript), and the program did not start.
			why := strings.TrimSpace(t.Message)
			if why == "" {
				why = "the container's /bin/sh did not set RLIMIT_NPROC"
			}
			return &errcode.Error{Code: errcode.Unsupported, Data: map[string]any{"container": name, "image": image, "exitCode": t.ExitCode}, Err: errNoPIDLimit,
				Msg: fmt.Sprintf("the pod's PID limit could not be set, so nothing runs without it: %s (image %s; its /bin/sh must set RLIMIT_NPROC with ulimit -u or ulimit -p)", why, image)}
		}
		if t := cs.State.Terminated; t != nil {
			return &errcode.Error{Code: errcode.Internal, Data: map[string]any{"container": name, "reason": t.Reason, "exitCode": t.ExitCode},
				Msg: fmt.Sprintf("the run's %s container ended before the run started (%s, exit code %d): does the image %s have /bin/sh?", name, t.Reason, t.ExitCode, image)}
		}
	}
	return nil
}

// running reports whether every container of the pod runs.
func running(p *corev1.Pod) bool {
	if len(p.Spec.Containers) == 0 {
		return false
	}
	for _, c := range p.Spec.Containers {
		cs := containerStatus(p, c.Name)
		if cs == nil || cs.State.Running == nil {
			return false
		}
	}
	return true
}

// unscheduled describes why the pod waits for a node, or "".
func unscheduled(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return strings.TrimSpace(c.Reason + ": " + c.Message)
		}
	}
	return ""
}
