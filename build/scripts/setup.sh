#!/usr/bin/env bash
# Installs what Sluice needs on Debian/Ubuntu and starts the services its
# tests use. Idempotent: each step checks first and does nothing when the
# machine already has what it needs.
#
#   setup.sh run    packages to build and run Sluice
#   setup.sh test   also packages and services for the full test suite
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
mode="${1:-run}"

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

say() { printf '==> %s\n' "$*" >&2; }

run_pkgs=(gcc pkg-config libgtk-3-dev libwebkit2gtk-4.1-dev git ca-certificates bubblewrap)
test_pkgs=(xvfb xauth dbus dbus-x11 dunst libnotify-bin imagemagick xdotool python3
  chromium docker.io busybox-static iptables haskell-status-notifier-item-utils
  runsc docker-registry openssh-client passwd
  containerd runc openssl util-linux iproute2)

apt_ensure() {
  local missing=()
  for p in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  if [ ${#missing[@]} -eq 0 ]; then return 0; fi
  if ! command -v apt-get >/dev/null; then
    say "missing packages (${missing[*]}) and no apt-get: install them with your package manager"
    exit 1
  fi
  say "installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

ensure_node() {
  # The front end builds with the distribution's Node (18 or newer).
  if command -v node >/dev/null && command -v npm >/dev/null; then return 0; fi
  apt_ensure nodejs npm
}

ensure_go() {
  if command -v go >/dev/null; then return 0; fi
  if [ -x /usr/local/go/bin/go ]; then return 0; fi
  apt_ensure golang-go
}

# Node 22 and the MCP clients Sluice is tested against (the MCP Inspector
# and the conformance suite need Node 22), from build/tools' lock file.
ensure_test_tools() {
  local dir="$root/build/tools"
  local stamp="$dir/node_modules/.sluice-lock-sha"
  local want
  want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return 0; fi
  say "installing test tools (npm install from build/tools' lock file)"
  # Not `npm ci`: Qwen Code lists optional packages for other platforms
  # that the registry does not serve (@teddyzhu/clipboard-darwin-*, …), so
  # the lock file cannot name them and `npm ci` refuses it as out of sync.
  # `npm install --no-save` installs exactly the locked versions and skips
  # the missing optional ones; the lock file stays as committed.
  (cd "$dir" && npm install --no-save --no-audit --no-fund --loglevel=error >/dev/null)
  echo "$want" >"$stamp"
}

# The Docker Engine for workspaces and their tests. Started directly when
# no init system manages it (containers, CI).
ensure_docker() {
  if docker info >/dev/null 2>&1; then return 0; fi
  say "starting the Docker Engine"
  if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
    $SUDO systemctl start docker || true
  fi
  if ! docker info >/dev/null 2>&1; then
    local log=/var/log/sluice-dockerd.log
    $SUDO sh -c "nohup dockerd >$log 2>&1 &"
  fi
  for _ in $(seq 1 60); do
    if docker info >/dev/null 2>&1; then return 0; fi
    sleep 1
  done
  say "the Docker Engine did not start; see /var/log/sluice-dockerd.log"
  exit 1
}

# gVisor (runsc) as a runtime of the Docker Engine, so that workspaces can
# run under it (workspaceRuntime: runsc) and the tests prove it. The entry
# is merged into /etc/docker/daemon.json, keeping whatever else is there;
# a running Engine reloads its runtimes on SIGHUP. runsc gets
# --network=none: without it, gVisor on these machines refuses to start a
# container in the host's network namespace, and a workspace has no
# network anyway (a runsc workspace cannot take an egress grant). It gets
# --host-uds=open too: a confined session under runsc (`sluice run
# --runtime runsc`) reaches its sidecar and its egress proxy through Unix
# sockets bound into the container, which gVisor otherwise refuses to
# mount. A workspace's container has no socket bound (its validation
# refuses every host path but its own), so it gains nothing from it.
ensure_runsc_runtime() {
  local conf=/etc/docker/daemon.json runsc
  runsc="$(command -v runsc || true)"
  if [ -z "$runsc" ]; then
    say "runsc is not installed"
    exit 1
  fi
  local changed
  changed="$($SUDO python3 - "$conf" "$runsc" <<'PY'
import json, os, sys
conf, path = sys.argv[1], sys.argv[2]
want = {"path": path, "runtimeArgs": ["--network=none", "--host-uds=open"]}
cur = {}
if os.path.exists(conf):
    with open(conf) as f:
        text = f.read().strip()
    cur = json.loads(text) if text else {}
if cur.get("runtimes", {}).get("runsc") == want:
    print("no")
    sys.exit(0)
cur.setdefault("runtimes", {})["runsc"] = want
os.makedirs(os.path.dirname(conf), exist_ok=True)
tmp = conf + ".sluice-tmp"
with open(tmp, "w") as f:
    json.dump(cur, f, indent=2)
    f.write("\n")
os.replace(tmp, conf)
print("yes")
PY
)"
  if [ "$changed" = yes ]; then say "registered runsc with the Docker Engine ($conf)"; fi
  # An Engine that was running before the entry existed (or changed)
  # reloads it.
  if docker info >/dev/null 2>&1 && ! docker info --format '{{json .Runtimes}}' | grep -q -- '--host-uds=open'; then
    local pid
    pid="$(cat /var/run/docker.pid 2>/dev/null || pidof dockerd || true)"
    if [ -z "$pid" ]; then
      say "the Docker Engine runs but its pid is unknown: restart it to load the runsc runtime"
      exit 1
    fi
    say "reloading the Docker Engine's runtimes (SIGHUP $pid)"
    $SUDO kill -HUP "$pid"
    for _ in $(seq 1 30); do
      if docker info --format '{{json .Runtimes}}' | grep -q -- '--host-uds=open'; then return 0; fi
      sleep 1
    done
    say "the Docker Engine did not load the runsc runtime; see $conf"
    exit 1
  fi
}

# The Kubernetes binaries the cluster tests run (build/k8s/cluster.sh),
# built from the Go module proxy into a cache outside the clone
# (${XDG_CACHE_HOME:-~/.cache}/sluice-k8s/<version>) when missing: about
# 20–40 minutes the first time on a machine, and 10 more for containerd
# and gVisor (SLUICE_K8S_GVISOR=0 skips those); nothing after that.
ensure_k8s() {
  if ! "$root/build/k8s/cluster.sh" build; then
    say "building the Kubernetes test binaries failed"
    exit 1
  fi
}

case "$mode" in
run)
  apt_ensure "${run_pkgs[@]}"
  ensure_go
  ensure_node
  ;;
test)
  apt_ensure "${run_pkgs[@]}" "${test_pkgs[@]}"
  ensure_go
  ensure_node
  ensure_test_tools
  ensure_docker
  ensure_runsc_runtime
  ensure_k8s
  ;;
*)
  echo "usage: setup.sh run|test" >&2
  exit 2
  ;;
esac
