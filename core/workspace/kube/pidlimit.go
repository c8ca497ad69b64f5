package kube

// A pod's own PID limit.
//
// Kubernetes has no pod or container field that bounds a pod's processes:
// only the kubelet's podPidsLimit does, the same number for every pod of a
// node, set by whoever runs the node and not readable through the API.
// Sluice bounds each of its pods itself, by RLIMIT_NPROC:
//
//   - The kernel counts a real uid's tasks (processes and threads, across
//     the whole node for a pod without a user namespace; across the sandbox
//     under gVisor, whose Sentry keeps the same count) and refuses a fork
//     or clone past the forking process's RLIMIT_NPROC with EAGAIN, unless
//     it has CAP_SYS_ADMIN or CAP_SYS_RESOURCE.
//   - Sluice's own first step in the untrusted container (pidLimitScript)
//     sets the limit, soft and hard, to the run's PID limit and checks it
//     took; the program inherits it and, with every capability dropped and
//     no privilege escalation, can lower it but never raise it.
//   - So that the count is the pod's alone, each pod runs under a uid (and
//     a gid of the same number) that nothing else uses: drawn from a
//     configured range (Options.PodUIDs) by the run's nonce. Two pods that
//     draw the same uid at the same time on the same node share one budget
//     (each is still held to the limit; together they are too, so a fork
//     loop in one can make the other's forks fail); with the default range
//     of 2^24 uids, among 100 pods at once that is about 3 chances in 10,000.
//
// The limit is the whole pod's: the pod's other processes under the same
// uid (the keeper's shell and its sleep, the copies and kills Sluice
// execs, the pause process where the node runs it as the pod's user) are
// counted with the program's. They are not held to the limit themselves
// (they do not inherit it), so a program at its limit cannot stop Sluice
// from copying the tree out or killing it.

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
)

// uidRange is a range of uids, [first, first+count).
type uidRange struct {
	first, count int64
}

// defaultPodUIDs is Options.PodUIDs' default: 0x70000000 and the 2^24
// uids after it, above the ranges systemd hands out to containers
// (nspawn's end below 0x70000000) and the kubelet's user namespaces (from
// 65536, 65536 a pod), below its foreign range (0x7FFE0000), and far from
// the uids people and system accounts have.
var defaultPodUIDs = uidRange{first: 0x70000000, count: 1 << 24}

// minPodUIDs is the smallest range Options.PodUIDs may name: the fewer
// uids, the likelier two pods share one.
const minPodUIDs = 1024

// maxPodUID is the largest uid a pod may run as (Kubernetes takes uids up
// to 2^31-1; the last is left alone, as some tools treat it as -1).
const maxPodUID = 1<<31 - 2

// parseUIDRange reads "FIRST-LAST" (both included); "" is the default.
func parseUIDRange(s string) (uidRange, error) {
	if s == "" {
		return defaultPodUIDs, nil
	}
	fs, ls, ok := strings.Cut(s, "-")
	first, err1 := strconv.ParseInt(strings.TrimSpace(fs), 10, 64)
	last, err2 := strconv.ParseInt(strings.TrimSpace(ls), 10, 64)
	if !ok || err1 != nil || err2 != nil || first < 1 || last > maxPodUID || last-first+1 < minPodUIDs {
		return uidRange{}, errcode.New(errcode.InvalidArgument,
			"the pods' uid range must be FIRST-LAST, 1 ≤ FIRST, LAST ≤ %d, at least %d uids that nothing else on the nodes uses, not %q", int64(maxPodUID), minPodUIDs, s)
	}
	return uidRange{first: first, count: last - first + 1}, nil
}

func (u uidRange) String() string {
	return strconv.FormatInt(u.first, 10) + "-" + strconv.FormatInt(u.first+u.count-1, 10)
}

// contains says whether uid is in the range.
func (u uidRange) contains(uid int64) bool { return uid >= u.first && uid < u.first+u.count }

// podUID is the uid (and gid) of the pod whose run drew nonce: a
// uniformly spread uid of the range, the same for the same nonce, so that
// a stored pod can be checked against it.
func (u uidRange) podUID(nonce string) int64 {
	sum := sha256.Sum256([]byte("sluice pod uid\x00" + nonce))
	return u.first + int64(binary.BigEndian.Uint64(sum[:8])%uint64(u.count))
}
