#!/usr/bin/env bash
# cluster.sh — a throwaway single-node Kubernetes for Sluice's tests: etcd,
# kube-apiserver, kube-controller-manager, kube-scheduler, a private
# containerd (CRI) and a kubelet, all under one base directory. No registry
# is needed: test images are OCI tarballs imported into that containerd.
#
#   build/k8s/cluster.sh build    build the binaries into the cache when missing
#   build/k8s/cluster.sh check    exit 0 if this host can run the node, else print why
#   build/k8s/cluster.sh start    start the cluster under $SLUICE_K8S_BASE
#   build/k8s/cluster.sh stop     stop it and remove $SLUICE_K8S_BASE
#   build/k8s/cluster.sh status   readiness and the node
#   build/k8s/cluster.sh env      print its environment (eval "$(cluster.sh env)")
#
# make test runs it through build/scripts/with-cluster.sh, which picks the
# base directory and a free port block and stops the cluster whatever happens.
#
# Environment:
#   SLUICE_K8S_BASE       base directory of one cluster (start, stop, status, env);
#                         everything it writes lives under it
#   SLUICE_K8S_BIN_DIR    the binaries (default ${XDG_CACHE_HOME:-$HOME/.cache}/sluice-k8s/<version>);
#                         outside any clone, so the cold build happens once per machine
#   SLUICE_K8S_PORT_BASE  first of a block of 1000 TCP ports on 127.0.0.1 (default 23000).
#                         Below Linux's ephemeral range (32768–60999), so no port the
#                         tests bind with :0 can take one of them.
#   SLUICE_K8S_NICE       nice level of the build (default 19)
#   SLUICE_K8S_GVISOR     1 (default): pods can also run under gVisor (RuntimeClass
#                         gvisor). runsc, gVisor's containerd shim and containerd 2.x
#                         (the node's containerd then: Debian's 1.6 cannot read the
#                         shim's bootstrap answer) are built from the Go module proxy
#                         into $SLUICE_K8S_BIN_DIR/gvisor. The shim is patched in one
#                         place: it keeps the OOM score it inherited where it may not
#                         set -999 (no CAP_SYS_RESOURCE) instead of refusing to start.
#                         0: runc under Debian's containerd only, nothing else built.
#   SLUICE_K8S_KEEP=1     stop leaves the files under the base directory
#
# Binaries: Kubernetes from the Go module proxy (a wrapper module requiring
# k8s.io/kubernetes, each staging module replaced by its published v0.x
# version), etcd from the go.etcd.io/etcd/server/v3 that Kubernetes requires,
# and a 30-line pause process. A version stamp (.k8s-version) marks a
# complete build; nothing is rebuilt while it matches.
#
# Measured on a 2-core Debian 12 VM shared with other builds (more in
# docs/development.md):
#   first build (nice 19)   624 s with part of it in the Go build cache,
#                           20–40 min from an empty one; containerd and gVisor 582 s
#   start                   13–19 s (control plane, node Ready, default service account)
#   stop                    7–9 s
#
# Host impact (deliberately small): no change to Docker, the system
# containerd, iptables or sysctls. containerd and the kubelet run in a
# private mount namespace where /var/lib, /var/log and /run/containerd are
# bind mounts of directories under the base, and the sysctls the kubelet
# insists on are faked by bind mounts over their /proc/sys files; all of
# those mounts vanish with the namespace. Pods get loopback and an eth0 with
# no route (a CNI plugin written below in shell: no bridge, no iptables rule,
# no host-side interface), so they have no network. Pod cgroups live under
# /sys/fs/cgroup/<controller>/sluice-k8s-<port base>. Processes are stopped
# by the PIDs recorded at start, never by name.
set -euo pipefail

K8S_VERSION=v1.37.2
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN=${SLUICE_K8S_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice-k8s/$K8S_VERSION}
PB=${SLUICE_K8S_PORT_BASE:-23000}
NICE=${SLUICE_K8S_NICE:-19}
NODE_NAME=localhost
CGROOT=sluice-k8s-$PB

ETCD_PORT=$((PB + 379)); ETCD_PEER_PORT=$((PB + 380)); APISERVER_PORT=$((PB + 443))
KCM_PORT=$((PB + 257)); SCHED_PORT=$((PB + 259)); KUBELET_PORT=$((PB + 250))
KUBELET_HEALTHZ_PORT=$((PB + 248)); STREAM_PORT=$((PB + 10))
PORTS="$ETCD_PORT $ETCD_PEER_PORT $APISERVER_PORT $KCM_PORT $SCHED_PORT $KUBELET_PORT $KUBELET_HEALTHZ_PORT $STREAM_PORT"
GVISOR=${SLUICE_K8S_GVISOR:-1}
CONTAINERD2_VERSION=v2.4.2
GVISOR_VERSION=v0.0.0-20260905035102-160fafc42237
GVD=$BIN/gvisor
PAUSE_IMAGE=localhost/sluice/pause:1
BUSYBOX_IMAGE=localhost/sluice/busybox:1

if [ -z "${GO:-}" ]; then
  if command -v go >/dev/null; then GO=go; else GO=/usr/local/go/bin/go; fi
fi

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }

need_base() {
  [ -n "${SLUICE_K8S_BASE:-}" ] || die "SLUICE_K8S_BASE is not set (the directory the cluster lives under)"
  case "$SLUICE_K8S_BASE" in /*) ;; *) die "SLUICE_K8S_BASE must be an absolute path" ;; esac
  BASE=${SLUICE_K8S_BASE%/}; RUN=$BASE/run; LOG=$BASE/log; PKI=$BASE/pki; CFG=$BASE/config
}

# ---------------------------------------------------------------- build
built() {
  [ -f "$BIN/.k8s-version" ] && [ "$(cat "$BIN/.k8s-version")" = "$K8S_VERSION" ] &&
    for b in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl etcd pause; do
      [ -x "$BIN/$b" ] || return 1
    done
}

build_k8s() {
  local src=$BIN/src minor staging t0 kdir gover ld p
  mkdir -p "$src" "$BIN/log"
  minor=${K8S_VERSION#v1.}; staging=v0.$minor
  log "resolving k8s.io/kubernetes@$K8S_VERSION"
  (cd "$src" && "$GO" mod download -json "k8s.io/kubernetes@$K8S_VERSION" >"$src/k8s.json")
  kdir=$(sed -n 's/.*"Dir": "\(.*\)".*/\1/p' "$src/k8s.json")
  gover=$(awk '$1=="go"{print $2; exit}' "$kdir/go.mod")
  {
    echo "module sluice.local/k8sbin"; echo; echo "go $gover"; echo
    echo "require k8s.io/kubernetes $K8S_VERSION"; echo; echo "replace ("
    # every staging module the kubernetes module replaces with ./staging/...
    # is published separately as k8s.io/X v0.<minor>
    awk '/^replace \(/{r=1;next} r&&/^\)/{r=0} r&&/=>/{print "\t" $1 " => " $1 " '"$staging"'"}' "$kdir/go.mod"
    echo ")"
  } >"$src/go.mod"
  ld="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=${minor%%.*} -X $p.gitTreeState=clean"
  done
  (cd "$src" && "$GO" get k8s.io/kubernetes/cmd/kube-apiserver@"$K8S_VERSION" \
    k8s.io/kubernetes/cmd/kube-controller-manager@"$K8S_VERSION" k8s.io/kubernetes/cmd/kube-scheduler@"$K8S_VERSION" \
    k8s.io/kubernetes/cmd/kubelet@"$K8S_VERSION" k8s.io/kubernetes/cmd/kubectl@"$K8S_VERSION") >"$BIN/log/go-get.log" 2>&1 ||
    { tail -30 "$BIN/log/go-get.log" >&2; die "go get k8s.io/kubernetes@$K8S_VERSION failed"; }
  t0=$(now)
  log "building Kubernetes $K8S_VERSION (go $gover, nice $NICE): the first build on a machine takes about 20–40 minutes"
  (cd "$src" && nice -n "$NICE" "$GO" build -trimpath -ldflags "$ld" -o "$BIN/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kubectl) \
    >"$BIN/log/build-k8s.log" 2>&1 || { tail -30 "$BIN/log/build-k8s.log" >&2; die "Kubernetes build failed"; }
  log "Kubernetes built in $(since "$t0")s"
  t0=$(now)
  # Kubernetes already requires go.etcd.io/etcd/server/v3, so the same
  # wrapper module builds the etcd it was tested with.
  (cd "$src" && nice -n "$NICE" "$GO" build -trimpath -ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3) \
    >"$BIN/log/build-etcd.log" 2>&1 || { tail -30 "$BIN/log/build-etcd.log" >&2; die "etcd build failed"; }
  log "etcd built in $(since "$t0")s"
}

build_pause() {
  local d=$BIN/src/pause
  mkdir -p "$d"
  cat >"$d/main.go" <<'EOF'
// pause is a pod's sandbox process: it waits for SIGINT or SIGTERM and
// reaps the zombies the pod's other processes leave.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ch := make(chan os.Signal, 8)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range ch {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
EOF
  printf 'module pause\n\ngo 1.21\n' >"$d/go.mod"
  (cd "$d" && GOFLAGS= nice -n "$NICE" "$GO" build -trimpath -ldflags "-s -w" -o "$BIN/pause" .)
}

gvisor_built() {
  [ -f "$GVD/.version" ] && [ "$(cat "$GVD/.version")" = "$CONTAINERD2_VERSION $GVISOR_VERSION" ] &&
    for b in containerd containerd-shim-runc-v2 ctr runsc containerd-shim-runsc-v1; do
      [ -x "$GVD/$b" ] || return 1
    done
}

build_gvisor() {
  local t0 src dir
  t0=$(now)
  mkdir -p "$GVD" "$BIN/log"
  rm -f "$GVD/.version"
  log "building containerd $CONTAINERD2_VERSION and gVisor ($GVISOR_VERSION), nice $NICE: about 10 minutes"
  # from $GVD: no go.mod above it, so no module's requirements interfere
  (cd "$GVD" && GOBIN=$GVD nice -n "$NICE" "$GO" install -trimpath -ldflags "-s -w" \
    "github.com/containerd/containerd/v2/cmd/containerd@$CONTAINERD2_VERSION" \
    "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$CONTAINERD2_VERSION" \
    "github.com/containerd/containerd/v2/cmd/ctr@$CONTAINERD2_VERSION") >"$BIN/log/build-containerd.log" 2>&1 ||
    { tail -30 "$BIN/log/build-containerd.log" >&2; die "containerd build failed"; }
  # gVisor from a copy of its module, with the one patch the shim needs
  dir=$(cd "$GVD" && "$GO" mod download -json "gvisor.dev/gvisor@$GVISOR_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [ -n "$dir" ] || die "cannot download gvisor.dev/gvisor@$GVISOR_VERSION"
  src=$BIN/src/gvisor
  mkdir -p "$BIN/src"; rm -rf "$src"; cp -r "$dir" "$src"; chmod -R u+w "$src"
  perl -0pi -e 's/if err := sys\.SetOOMScore\(cmd\.Process\.Pid, oomScoreMax\); err != nil \{\n\t\treturn shim\.BootstrapParams\{\}, fmt\.Errorf\("failed to set OOM Score on shim: %w", err\)\n\t\}/_ = sys.SetOOMScore(cmd.Process.Pid, oomScoreMax) \/\/ refused without CAP_SYS_RESOURCE; nothing may be printed here/' \
    "$src/pkg/shim/v1/manager.go"
  grep -q 'nothing may be printed here' "$src/pkg/shim/v1/manager.go" ||
    die "gVisor's shim changed: the OOM-score patch no longer applies to $src/pkg/shim/v1/manager.go"
  (cd "$src" && nice -n "$NICE" "$GO" build -trimpath -ldflags "-s -w" -o "$GVD/runsc" ./runsc &&
    nice -n "$NICE" "$GO" build -trimpath -ldflags "-s -w" -o "$GVD/containerd-shim-runsc-v1" ./shim) \
    >"$BIN/log/build-gvisor.log" 2>&1 || { tail -30 "$BIN/log/build-gvisor.log" >&2; die "gVisor build failed"; }
  echo "$CONTAINERD2_VERSION $GVISOR_VERSION" >"$GVD/.version"
  log "containerd and gVisor built in $(since "$t0")s"
}

do_build() {
  if [ "$GVISOR" = 1 ] && ! gvisor_built; then
    do_build_k8s
    exec 8>"$BIN/.build.lock"; flock 8
    export CGO_ENABLED=0 GOFLAGS=-mod=mod
    gvisor_built || build_gvisor
    return
  fi
  do_build_k8s
}

do_build_k8s() {
  if built; then return; fi  # silent: setup.sh runs this every time
  command -v "$GO" >/dev/null || [ -x "$GO" ] || die "go not found (set GO)"
  mkdir -p "$BIN"
  # One build per cache directory at a time; a second caller waits for it.
  exec 8>"$BIN/.build.lock"
  if ! flock -n 8; then log "another build into $BIN is running; waiting for it"; flock 8; fi
  if built; then log "Kubernetes $K8S_VERSION binaries present in $BIN"; return; fi
  local t0; t0=$(now)
  export CGO_ENABLED=0 GOFLAGS=-mod=mod
  rm -f "$BIN/.k8s-version"
  if [ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/kubectl" ] && [ -x "$BIN/kubelet" ] && [ -x "$BIN/etcd" ] &&
     [ -x "$BIN/kube-controller-manager" ] && [ -x "$BIN/kube-scheduler" ] &&
     [ "$("$BIN/kube-apiserver" --version 2>/dev/null)" = "Kubernetes $K8S_VERSION" ]; then
    log "Kubernetes $K8S_VERSION binaries present without a stamp; keeping them"
  else
    build_k8s
  fi
  build_pause
  echo "$K8S_VERSION" >"$BIN/.k8s-version"
  log "build done in $(since "$t0")s"
}

# ---------------------------------------------------------------- check
# host_reason prints why this host cannot run the node, or nothing.
host_reason() {
  [ "$(uname -s)" = Linux ] || { echo "not Linux"; return; }
  [ "$(id -u)" = 0 ] || { echo "not root (the kubelet and containerd need root)"; return; }
  local c missing=()
  for c in containerd containerd-shim-runc-v2 runc ctr openssl unshare nsenter ip flock mount tar sha256sum setsid; do
    command -v "$c" >/dev/null || missing+=("$c")
  done
  [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 || missing+=("busybox-static")
  [ ${#missing[@]} -eq 0 ] || { echo "missing: ${missing[*]} (build/scripts/setup.sh test installs them)"; return; }
  unshare --mount --propagation private true 2>/dev/null || { echo "cannot create a mount namespace (unshare --mount failed)"; return; }
  if [ -d /sys/fs/cgroup/pids ]; then
    mkdir "/sys/fs/cgroup/pids/sluice-k8s-check.$$" 2>/dev/null ||
      { echo "cannot create cgroups under /sys/fs/cgroup/pids"; return; }
    rmdir "/sys/fs/cgroup/pids/sluice-k8s-check.$$"
  elif [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    echo "cgroup v2: this cluster is set up for cgroup v1 hierarchies only"; return
  else
    echo "no cgroup hierarchy at /sys/fs/cgroup"; return
  fi
  # (no `| grep -q` under pipefail: an early exit of grep fails the pipe)
  [ -n "$(ip -4 -o addr show scope global 2>/dev/null)" ] ||
    { echo "no non-loopback IPv4 address (the kubelet refuses a loopback node IP)"; return; }
}

do_check() {
  local r; r=$(host_reason)
  if [ -n "$r" ]; then echo "$r"; exit 1; fi
}

# ---------------------------------------------------------------- start
# Two CNI plugins in shell (no Go build, no host-side network change):
#  loopback     brings lo up in the pod's network namespace
#  sluice-none  gives the pod an eth0 with a unique /32 and no route: one end
#               of a veth pair whose other end stays inside the pod too (VM
#               kernels often lack the dummy link type; Docker needs veth)
write_cni() {
  mkdir -p "$BASE/cni"
  cat >"$BASE/cni/loopback" <<'CNI'
#!/bin/sh
cfg=$(cat)
ver=$(printf '%s' "$cfg" | sed -n 's/.*"cniVersion" *: *"\([^"]*\)".*/\1/p')
case "$CNI_COMMAND" in
VERSION) echo '{"cniVersion":"1.0.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0"]}' ;;
ADD) nsenter --net="$CNI_NETNS" ip link set lo up >&2 ||
       { printf '{"cniVersion":"%s","code":11,"msg":"loopback: cannot set lo up"}\n' "$ver"; exit 1; }
     printf '{"cniVersion":"%s","interfaces":[{"name":"lo","sandbox":"%s"}],"ips":[{"version":"4","address":"127.0.0.1/8","interface":0}]}\n' "$ver" "$CNI_NETNS" ;;
esac
exit 0
CNI
  cat >"$BASE/cni/sluice-none" <<'CNI'
#!/bin/sh
cfg=$(cat)
ver=$(printf '%s' "$cfg" | sed -n 's/.*"cniVersion" *: *"\([^"]*\)".*/\1/p')
dir=$(printf '%s' "$cfg" | sed -n 's/.*"dataDir" *: *"\([^"]*\)".*/\1/p')
fail() { printf '{"cniVersion":"%s","code":11,"msg":"sluice-none: %s"}\n' "$ver" "$1"; exit 1; }
case "$CNI_COMMAND" in
VERSION) echo '{"cniVersion":"1.0.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0"]}' ;;
ADD)
  [ -n "$dir" ] || fail "dataDir not set"
  mkdir -p "$dir" || fail "cannot create $dir"
  exec 9>"$dir/lock"; flock 9
  if [ -f "$dir/$CNI_CONTAINERID" ]; then ip=$(cat "$dir/$CNI_CONTAINERID"); else
    n=$(cat "$dir/next" 2>/dev/null || echo 0); echo $((n + 1)) > "$dir/next"
    ip="10.244.$(( (n / 250) % 256 )).$(( n % 250 + 2 ))"; echo "$ip" > "$dir/$CNI_CONTAINERID"
  fi
  flock -u 9
  nsenter --net="$CNI_NETNS" sh -c "ip link show $CNI_IFNAME >/dev/null 2>&1 ||
      { ip link add $CNI_IFNAME type veth peer name sink0 && ip addr add $ip/32 dev $CNI_IFNAME &&
        ip link set sink0 up && ip link set $CNI_IFNAME up; }" >&2 || fail "cannot create $CNI_IFNAME"
  printf '{"cniVersion":"%s","interfaces":[{"name":"%s","sandbox":"%s"}],"ips":[{"version":"4","address":"%s/32","interface":0}]}\n' \
    "$ver" "$CNI_IFNAME" "$CNI_NETNS" "$ip" ;;
DEL)
  [ -n "$CNI_NETNS" ] && [ -e "$CNI_NETNS" ] && nsenter --net="$CNI_NETNS" ip link del "$CNI_IFNAME" 2>/dev/null
  [ -n "$dir" ] && rm -f "$dir/$CNI_CONTAINERID" ;;
esac
exit 0
CNI
  chmod +x "$BASE/cni/loopback" "$BASE/cni/sluice-none"
}

# mkimage NAME ROOTFS_DIR OUT.tar ENTRYPOINT_JSON [CMD_JSON]
# writes a single-layer OCI image-layout tarball that `ctr images import` takes.
mkimage() {
  local name=$1 rootfs=$2 out=$3 ep=$4 cmd=${5:-null} w ld ls cd cs md ms
  w=$(mktemp -d "$BASE/images/.build.XXXXXX"); mkdir -p "$w/blobs/sha256"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$rootfs" -cf "$w/layer" .
  ld=$(sha256sum "$w/layer" | cut -d' ' -f1); ls=$(stat -c %s "$w/layer"); mv "$w/layer" "$w/blobs/sha256/$ld"
  printf '{"architecture":"%s","os":"linux","config":{"Env":["PATH=/bin:/usr/bin:/sbin:/usr/sbin"],"Entrypoint":%s,"Cmd":%s,"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$(goarch)" "$ep" "$cmd" "$ld" >"$w/cfg"
  cd=$(sha256sum "$w/cfg" | cut -d' ' -f1); cs=$(stat -c %s "$w/cfg"); mv "$w/cfg" "$w/blobs/sha256/$cd"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
    "$cd" "$cs" "$ld" "$ls" >"$w/man"
  md=$(sha256sum "$w/man" | cut -d' ' -f1); ms=$(stat -c %s "$w/man"); mv "$w/man" "$w/blobs/sha256/$md"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "$md" "$ms" "$name" "${name##*:}" >"$w/index.json"
  echo '{"imageLayoutVersion":"1.0.0"}' >"$w/oci-layout"
  tar -C "$w" -cf "$out" oci-layout index.json blobs
  rm -rf "$w"
}

goarch() { case "$(uname -m)" in x86_64) echo amd64 ;; aarch64) echo arm64 ;; *) uname -m ;; esac; }

# The images every test may use: the sandbox's pause image and busybox (the
# host's static build), both built here so no registry is needed.
write_images() {
  local r a
  mkdir -p "$BASE/images"
  r=$(mktemp -d "$BASE/images/.root.XXXXXX"); cp "$BIN/pause" "$r/pause"
  mkimage "$PAUSE_IMAGE" "$r" "$BASE/images/pause.tar" '["/pause"]'; rm -rf "$r"
  r=$(mktemp -d "$BASE/images/.root.XXXXXX"); mkdir -p "$r/bin" "$r/tmp" "$r/etc" "$r/proc" "$r/sys" "$r/dev"
  chmod 1777 "$r/tmp"
  cp /bin/busybox "$r/bin/busybox"
  for a in $(/bin/busybox --list); do [ "$a" = busybox ] || ln -s busybox "$r/bin/$a"; done
  echo 'root:x:0:0:root:/root:/bin/sh' >"$r/etc/passwd"; echo 'root:x:0:' >"$r/etc/group"
  mkimage "$BUSYBOX_IMAGE" "$r" "$BASE/images/busybox.tar" 'null' '["/bin/sh"]'; rm -rf "$r"
}

gen_certs() {
  log "generating certificates"
  (cd "$PKI"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 30 -subj "/CN=sluice-k8s-ca" 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null; openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    # cert NAME CN O EXTENDED-USAGE [SAN]
    cert() {
      local ext=$PKI/$1.ext
      printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=%s\n' "$4" >"$ext"
      [ -n "${5:-}" ] && echo "subjectAltName=$5" >>"$ext"
      openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "/O=$3/CN=$2" 2>/dev/null
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" -days 30 -extfile "$ext" 2>/dev/null
      rm -f "$1.csr" "$ext"
    }
    cert apiserver kube-apiserver kube serverAuth "IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
    cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters clientAuth
    cert admin admin system:masters clientAuth
    cert kcm system:kube-controller-manager system:kube-controller-manager clientAuth
    cert scheduler system:kube-scheduler system:kube-scheduler clientAuth
    cert kubelet "system:node:$NODE_NAME" system:nodes clientAuth
    cert kubelet-serving "system:node:$NODE_NAME" system:nodes serverAuth "IP:127.0.0.1,DNS:localhost,DNS:$NODE_NAME")
  local who
  for who in admin kcm scheduler kubelet; do
    cat >"$CFG/$who.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority: $PKI/ca.crt
users:
- name: $who
  user:
    client-certificate: $PKI/$who.crt
    client-key: $PKI/$who.key
contexts:
- name: local
  context: {cluster: local, user: $who}
current-context: local
EOF
  done
}

# start_proc NAME CMD... runs CMD in its own session with its own log and
# records its PID; stop signals exactly those PIDs.
start_proc() {
  local name=$1; shift
  setsid "$@" >"$LOG/$name.log" 2>&1 </dev/null &
  echo $! >"$RUN/$name.pid"
}

wait_for() { # DESC TIMEOUT CMD...  (fails fast when a started process died)
  local desc=$1 to=$2 end f; shift 2
  end=$(($(date +%s) + to))
  until "$@" >/dev/null 2>&1; do
    for f in "$RUN"/*.pid; do
      [ -f "$f" ] && ! kill -0 "$(cat "$f")" 2>/dev/null &&
        { tail -5 "$LOG/$(basename "$f" .pid).log" >&2; die "$(basename "$f" .pid) exited while waiting for $desc"; }
    done
    [ "$(date +%s)" -gt "$end" ] && die "timed out waiting for $desc (see $LOG)"
    sleep 0.2
  done
}

KUBECTL() { "$BIN/kubectl" --kubeconfig "$CFG/admin.kubeconfig" "$@"; }

start_control_plane() {
  mkdir -p "$BASE/etcd"
  start_proc etcd "$BIN/etcd" --name default --data-dir "$BASE/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "default=http://127.0.0.1:$ETCD_PEER_PORT" --unsafe-no-fsync --log-level warn
  # --endpoint-reconciler-type none: an API server on 127.0.0.1 cannot be a
  # Service endpoint. The kubelet is reached by its Hostname address (the
  # node is named localhost), because it refuses a loopback node IP.
  start_proc kube-apiserver "$BIN/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$APISERVER_PORT" \
    --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" --client-ca-file "$PKI/ca.crt" \
    --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types Hostname \
    --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$PKI/sa.pub" \
    --service-account-signing-key-file "$PKI/sa.key" --service-cluster-ip-range 10.96.0.0/24 \
    --endpoint-reconciler-type none \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction,ResourceQuota --allow-privileged=true \
    --cert-dir "$PKI/apiserver-generated" --profiling=false --v=1
  local t0; t0=$(now)
  wait_for "apiserver /readyz" 120 KUBECTL get --raw /readyz
  log "apiserver ready in $(since "$t0")s"
  start_proc kube-controller-manager "$BIN/kube-controller-manager" \
    --kubeconfig "$CFG/kcm.kubeconfig" --authentication-kubeconfig "$CFG/kcm.kubeconfig" --authorization-kubeconfig "$CFG/kcm.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$KCM_PORT" --leader-elect=false \
    --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" --use-service-account-credentials \
    --cert-dir "$PKI/kcm-generated" --profiling=false
  start_proc kube-scheduler "$BIN/kube-scheduler" \
    --kubeconfig "$CFG/scheduler.kubeconfig" --authentication-kubeconfig "$CFG/scheduler.kubeconfig" --authorization-kubeconfig "$CFG/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$SCHED_PORT" --leader-elect=false \
    --cert-dir "$PKI/scheduler-generated" --profiling=false
}

write_node_config() {
  local N=$BASE/node
  mkdir -p "$N/containerd/root" "$N/containerd/state" "$N/var-lib" "$N/var-log" "$N/run-containerd" \
    "$N/cni/net.d" "$N/kubelet" "$N/pod-logs" "$N/fake-sysctl" "$N/runc-root"
  local runsc=""
  if [ "$GVISOR" = 1 ]; then
    # runsc_config keys are runsc's flags; pods have no route anyway.
    # containerd 2.x reads this version-2 file too (it migrates it).
    cat >"$CFG/runsc.toml" <<EOF
binary_name = "$GVD/runsc"
root = "$N/runsc-root"
[runsc_config]
  network = "none"
EOF
    mkdir -p "$N/runsc-root"
    runsc="
    [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runsc]
      runtime_type = \"io.containerd.runsc.v1\"
      pod_annotations = [\"dev.gvisor.*\"]
      [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runsc.options]
        TypeUrl = \"io.containerd.runsc.v1.options\"
        ConfigPath = \"$CFG/runsc.toml\""
  fi
  cat >"$CFG/containerd.toml" <<EOF
version = 2
root = "$N/containerd/root"
state = "$N/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$BASE/containerd.sock"
[ttrpc]
  address = ""
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$N/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  stream_server_address = "127.0.0.1"
  stream_server_port = "$STREAM_PORT"
  netns_mounts_under_state_dir = true
  enable_selinux = false
  disable_apparmor = true
  # Without CAP_SYS_RESOURCE a negative oom_score_adj (the kubelet asks
  # -998 for sandboxes) is refused; clamp to containerd's own instead.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$N/runc-root"$runsc
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$BASE/cni"
    conf_dir = "$N/cni/net.d"
    max_conf_num = 1
EOF
  cat >"$N/cni/net.d/10-sluice.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "sluice-none",
  "plugins": [
    {"type": "sluice-none", "dataDir": "$N/cni/ipam"}
  ]
}
EOF
  # failCgroupV1: false — v1.35+ refuses cgroup v1 unless told otherwise.
  cat >"$CFG/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
tlsCertFile: $PKI/kubelet-serving.crt
tlsPrivateKeyFile: $PKI/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$BASE/containerd.sock
cgroupDriver: cgroupfs
cgroupRoot: /$CGROOT
failCgroupV1: false
failSwapOn: false
makeIPTablesUtilChains: false
protectKernelDefaults: false
podLogsDir: $N/pod-logs
volumePluginDir: $N/kubelet/volume-plugins
staticPodPath: ""
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
serializeImagePulls: false
maxPods: 110
EOF
}

# node.sh runs inside the private mount namespace: it hides the host paths
# containerd and the kubelet hard-code behind directories of the base, fakes
# the sysctls the kubelet would otherwise rewrite, imports the test images,
# then runs containerd and the kubelet.
write_node_script() {
  cat >"$CFG/node.sh" <<'EOS'
#!/usr/bin/env bash
set -euo pipefail
BASE=$1; BIN=$2; N=$BASE/node; CFG=$BASE/config; RUN=$BASE/run; LOG=$BASE/log
mount --make-rprivate /
mount --bind "$N/var-lib" /var/lib
mount --bind "$N/var-log" /var/log
mkdir -p /run/containerd 2>/dev/null || true
mount --bind "$N/run-containerd" /run/containerd
fake() { # SYSCTL-PATH WANTED
  local f=/proc/sys/$1 cur
  cur=$(cat "$f" 2>/dev/null) || return 0
  [ "$cur" = "$2" ] && return 0
  echo "$2" > "$N/fake-sysctl/${1//\//_}"
  mount --bind "$N/fake-sysctl/${1//\//_}" "$f"
}
fake vm/overcommit_memory 1; fake vm/panic_on_oom 0; fake kernel/panic 10
fake kernel/panic_on_oops 1; fake kernel/keys/root_maxkeys 1000000; fake kernel/keys/root_maxbytes 25000000
# With gVisor, the containerd built beside it (2.x) runs, and finds its
# shims (containerd-shim-runc-v2, containerd-shim-runsc-v1) first on PATH.
CTR=ctr
if [ -f "$CFG/gvisor" ]; then export PATH="$BIN/gvisor:$PATH"; CTR=$BIN/gvisor/ctr; fi
containerd --config "$CFG/containerd.toml" > "$LOG/containerd.log" 2>&1 &
echo $! > "$RUN/containerd.pid"
for _ in $(seq 100); do [ -S "$BASE/containerd.sock" ] && break; sleep 0.1; done
for img in "$BASE"/images/*.tar; do
  "$CTR" --address "$BASE/containerd.sock" -n k8s.io images import "$img" >> "$LOG/ctr-import.log" 2>&1
done
echo imported > "$RUN/images.ready"
# The kubelet's usual root (here $N/var-lib/kubelet): gVisor's shim finds a
# pod's volumes there, by that path, for its mount hints.
"$BIN/kubelet" --config "$CFG/kubelet.yaml" --kubeconfig "$CFG/kubelet.kubeconfig" \
  --root-dir /var/lib/kubelet --node-ip "$(cat "$CFG/node-ip")" --hostname-override "$(cat "$CFG/node-name")" \
  --v=1 > "$LOG/kubelet.log" 2>&1 &
echo $! > "$RUN/kubelet.pid"
wait
EOS
  chmod +x "$CFG/node.sh"
}

start_node() {
  local c
  for c in cpu cpuacct cpuset memory pids devices freezer blkio hugetlb systemd; do
    [ -d "/sys/fs/cgroup/$c" ] && mkdir -p "/sys/fs/cgroup/$c/$CGROOT"
  done
  if [ -d "/sys/fs/cgroup/cpuset/$CGROOT" ]; then # a v1 cpuset needs cpus and mems before use
    cat /sys/fs/cgroup/cpuset/cpuset.cpus >"/sys/fs/cgroup/cpuset/$CGROOT/cpuset.cpus"
    cat /sys/fs/cgroup/cpuset/cpuset.mems >"/sys/fs/cgroup/cpuset/$CGROOT/cpuset.mems"
  fi
  echo "$CGROOT" >"$RUN/cgroup-root"
  echo "$NODE_NAME" >"$CFG/node-name"
  # informational only, but it must be a non-loopback address of this host
  ip -4 -o addr show scope global | awk '{split($4, a, "/"); print a[1]; exit}' >"$CFG/node-ip"
  [ -s "$CFG/node-ip" ] || die "no non-loopback IPv4 address on this host for the kubelet's node IP"
  if [ "$GVISOR" = 1 ]; then touch "$CFG/gvisor"; fi
  write_node_config; write_node_script
  start_proc node unshare --mount --propagation private "$CFG/node.sh" "$BASE" "$BIN"
  local t0; t0=$(now)
  wait_for "containerd and the image import" 60 test -f "$RUN/images.ready"
  readlink "/proc/$(cat "$RUN/containerd.pid")/ns/mnt" >"$RUN/node.mntns"
  wait_for "node $NODE_NAME Ready" 120 sh -c "'$BIN/kubectl' --kubeconfig '$CFG/admin.kubeconfig' get node '$NODE_NAME' -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
  log "node Ready $(since "$t0")s after starting containerd"
  if [ "$GVISOR" = 1 ]; then
    printf 'apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: gvisor}\nhandler: runsc\n' |
      KUBECTL apply -f - >/dev/null
  fi
  # pods need the default service account, which the controller manager makes
  wait_for "default service account" 60 KUBECTL -n default get serviceaccount default
}

write_env() {
  cat >"$BASE/env.sh" <<EOF
export SLUICE_K8S_BASE=$BASE
export SLUICE_K8S_BIN_DIR=$BIN
export KUBECONFIG=$CFG/admin.kubeconfig
export SLUICE_K8S_NODE=$NODE_NAME
export SLUICE_K8S_PAUSE_IMAGE=$PAUSE_IMAGE
export SLUICE_K8S_BUSYBOX_IMAGE=$BUSYBOX_IMAGE
export SLUICE_K8S_CONTAINERD=$BASE/containerd.sock
export SLUICE_K8S_CTR=$(if [ "$GVISOR" = 1 ]; then echo "$GVD/ctr"; else command -v ctr; fi)
export SLUICE_K8S_GVISOR=$(if [ "$GVISOR" = 1 ]; then echo gvisor; fi)
EOF
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

do_start() {
  need_base
  local t0 r p; t0=$(now)
  r=$(host_reason); [ -z "$r" ] || die "this host cannot run the node: $r"
  built || die "Kubernetes binaries missing in $BIN; run: $0 build"
  [ "$GVISOR" != 1 ] || gvisor_built || die "gVisor binaries missing in $GVD; run: $0 build (or set SLUICE_K8S_GVISOR=0)"
  for p in $PORTS; do port_busy "$p" && die "port $p (block $PB) is in use; set SLUICE_K8S_PORT_BASE"; done
  [ ! -e "$BASE/run" ] || die "$BASE already holds a cluster; stop it first"
  # A start that fails stops what it started and keeps the logs.
  trap 'if [ $? -ne 0 ]; then log "start failed; stopping what was started (logs kept in $LOG)"; (export SLUICE_K8S_KEEP=1; do_stop); fi' EXIT
  mkdir -p "$RUN" "$LOG" "$PKI" "$CFG"
  echo "$BIN" >"$RUN/bin-dir"
  touch "$BASE/.sluice-k8s"
  write_cni; write_images; gen_certs
  start_control_plane
  start_node
  write_env
  log "cluster up in $(since "$t0")s (base $BASE, ports $PB–$((PB + 999)))"
}

# ---------------------------------------------------------------- stop
pidof_file() { [ -f "$RUN/$1.pid" ] && cat "$RUN/$1.pid"; }
alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }
stop_pid() { # PID NAME [GRACE-SECONDS]
  local pid=$1 name=$2 g=${3:-10} i
  alive "$pid" || return 0
  kill -TERM "$pid" 2>/dev/null
  for ((i = 0; i < g * 10; i++)); do alive "$pid" || { log "stopped $name ($pid)"; return 0; }; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null; log "killed $name ($pid)"
}

do_stop() {
  need_base
  [ -d "$BASE" ] || { log "$BASE does not exist"; return 0; }
  [ -f "$BASE/.sluice-k8s" ] || die "$BASE was not made by $0 start; not touching it"
  # From here on, do as much as can be done: one failed step must not leave
  # the rest running.
  set +e
  local bin pids pass c p pid ns left="" cg cmdline
  bin=$(cat "$RUN/bin-dir" 2>/dev/null || echo "$BIN")
  # 1. let the kubelet remove the pods while the API server is still up
  if alive "$(pidof_file kubelet)" && alive "$(pidof_file kube-apiserver)"; then
    "$bin/kubectl" --kubeconfig "$CFG/admin.kubeconfig" delete pods --all --all-namespaces \
      --grace-period=1 --timeout=30s >/dev/null 2>&1 || true
  fi
  stop_pid "$(pidof_file kubelet)" kubelet 15
  # 2. whatever is still in the pod cgroups (containers, shims' children)
  cg=$(cat "$RUN/cgroup-root" 2>/dev/null || true)
  if [ -n "$cg" ]; then
    for pass in TERM KILL; do
      pids=$(find "/sys/fs/cgroup/pids/$cg" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u)
      [ -z "$pids" ] && break
      log "sending $pass to pod processes: $(echo $pids)"
      kill -"$pass" $pids 2>/dev/null; sleep 1
    done
  fi
  # 3. containerd, then shims that still serve our socket
  stop_pid "$(pidof_file containerd)" containerd 10
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    cmdline=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline") || continue
    case "$cmdline" in
    *"-address $BASE/containerd.sock "*) kill -KILL "$pid" 2>/dev/null && log "killed shim $pid" ;;
    esac
  done
  stop_pid "$(pidof_file node)" node-namespace 5
  # 4. anything left in the node's private mount namespace
  if [ -f "$RUN/node.mntns" ]; then
    ns=$(cat "$RUN/node.mntns")
    for p in /proc/[0-9]*; do
      [ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$ns" ] && kill -KILL "${p#/proc/}" 2>/dev/null && log "killed ${p#/proc/} (node mount namespace)"
    done
  fi
  # 5. the control plane: its clients together, then etcd
  for c in kube-scheduler kube-controller-manager kube-apiserver; do
    pid=$(pidof_file $c) && alive "$pid" && kill -TERM "$pid" 2>/dev/null
  done
  for c in kube-scheduler kube-controller-manager kube-apiserver etcd; do
    stop_pid "$(pidof_file $c)" "$c" 10
  done
  # 6. cgroups, deepest first
  if [ -n "$cg" ]; then
    for pass in 1 2 3; do
      for c in /sys/fs/cgroup/*/"$cg"; do [ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null; done
      left=$(ls -d /sys/fs/cgroup/*/"$cg" 2>/dev/null || true)
      [ -z "$left" ] && break
      sleep 0.5
    done
    [ -z "$left" ] || log "WARNING: cgroups not removed: $left"
  fi
  # The node's mounts lived in its own mount namespace, so none can be seen
  # here; refuse to delete anything if one is.
  if grep -qF " $BASE/" /proc/self/mountinfo; then
    grep -F " $BASE/" /proc/self/mountinfo >&2; die "mounts under $BASE are still visible; not deleting it"
  fi
  if [ "${SLUICE_K8S_KEEP:-0}" = 1 ]; then
    rm -rf "$RUN"; log "stopped; kept $BASE"
  else
    rm -rf "$BASE"; log "stopped; removed $BASE"
  fi
}

do_status() {
  need_base
  KUBECTL get --raw /readyz && echo && KUBECTL get nodes -o wide
}

do_env() {
  need_base
  [ -f "$BASE/env.sh" ] || die "no cluster started under $BASE"
  cat "$BASE/env.sh"
}

case "${1:-}" in
build) do_build ;;
check) do_check ;;
start) do_start ;;
stop) do_stop ;;
status) do_status ;;
env) do_env ;;
*) echo "usage: $0 build|check|start|stop|status|env" >&2; exit 2 ;;
esac
