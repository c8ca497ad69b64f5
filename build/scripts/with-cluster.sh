#!/usr/bin/env bash
# with-cluster.sh CMD... — runs CMD with a single-node Kubernetes cluster
# (build/k8s/cluster.sh) started for it and stopped afterwards, whatever
# happens: on CMD's exit, on Ctrl-C or TERM, and — through a watchdog —
# even when this script is killed outright.
#
# CMD gets SLUICE_K8S_BASE (the cluster's base directory: env.sh,
# config/admin.kubeconfig, containerd.sock) and the variables of its
# env.sh. When the host cannot run the node (not root, no cgroup v1
# hierarchy, no mount namespaces, a missing package), it says why once,
# runs CMD without a cluster and passes the reason on as
# SLUICE_K8S_UNAVAILABLE, so that the tests skip saying the same. A
# cluster that should start but does not fails the run before CMD.
#
#   SLUICE_K8S_PORT_BASE  port block to use (default: the first free one of
#                         23000, 24000, … 31000, below the ephemeral range)
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cluster="$root/build/k8s/cluster.sh"

say() { printf '==> %s\n' "$*" >&2; }

if [ $# -eq 0 ]; then
  echo "usage: with-cluster.sh CMD..." >&2
  exit 2
fi

if ! reason="$("$cluster" check)"; then
  say "no Kubernetes node for the tests: $reason"
  export SLUICE_K8S_UNAVAILABLE="$reason"
  exec "$@"
fi

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
block_free() {
  local o
  for o in 10 248 250 257 259 379 380 443; do
    if port_busy $(($1 + o)); then return 1; fi
  done
  # another cluster of this machine owns the block's cgroups
  ! ls -d /sys/fs/cgroup/*/"sluice-k8s-$1" >/dev/null 2>&1
}
pb="${SLUICE_K8S_PORT_BASE:-}"
if [ -z "$pb" ]; then
  for b in 23000 24000 25000 26000 27000 28000 29000 30000 31000; do
    if block_free "$b"; then pb=$b; break; fi
  done
  if [ -z "$pb" ]; then
    say "no free port block for the Kubernetes cluster (23000–31999 all in use)"
    exit 1
  fi
fi

base="$(mktemp -d "${TMPDIR:-/tmp}/sluice-k8s.XXXXXX")"
export SLUICE_K8S_BASE="$base" SLUICE_K8S_PORT_BASE="$pb"

stopped=0
stop_cluster() {
  if [ "$stopped" = 1 ]; then return; fi
  stopped=1
  if [ -n "${watchdog:-}" ]; then kill "$watchdog" 2>/dev/null; fi
  if [ -f "$base/.sluice-k8s" ]; then
    "$cluster" stop || say "stopping the cluster under $base failed"
  else
    rmdir "$base" 2>/dev/null || true
  fi
}
trap stop_cluster EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# The watchdog stops the cluster if this script dies without running its
# trap (SIGKILL). It runs in its own session, so a Ctrl-C to the
# terminal's process group does not end it first; stop_cluster ends it by
# its PID.
setsid bash -c '
  while kill -0 "$1" 2>/dev/null; do sleep 2; done
  [ -f "$2/.sluice-k8s" ] && SLUICE_K8S_BASE="$2" "$3" stop
' watchdog "$$" "$base" "$cluster" </dev/null >/dev/null 2>&1 &
watchdog=$!

t0=$(date +%s)
if ! "$cluster" start; then
  say "the Kubernetes cluster did not start; its logs:"
  for f in "$base"/log/*.log; do
    [ -f "$f" ] || continue
    echo "--- $f" >&2
    tail -15 "$f" >&2
  done
  exit 1
fi
say "Kubernetes cluster up in $(($(date +%s) - t0)) s under $base"
# shellcheck disable=SC1091
source "$base/env.sh"

# CMD runs in the background so that a signal to this script is handled
# at once: it is passed on to CMD, which is waited for, and only then is
# the cluster stopped.
"$@" <&0 &
child=$!
forward() {
  kill -"$1" "$child" 2>/dev/null
  wait "$child"
  exit "$2"
}
trap 'forward INT 130' INT
trap 'forward TERM 143' TERM
trap 'forward HUP 129' HUP
rc=0
wait "$child" || rc=$?
if [ "$rc" != 0 ]; then
  # What the node did last is often why a test on it failed; the logs go
  # with the cluster.
  say "the command failed ($rc); the node's and the API server's last log lines:"
  for f in "$base"/log/containerd.log "$base"/log/kubelet.log "$base"/log/kube-apiserver.log; do
    [ -f "$f" ] || continue
    echo "--- $f" >&2
    tail -40 "$f" >&2
  done
fi
exit "$rc"
