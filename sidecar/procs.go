package sidecar

import (
	"os"
	"runtime"
)

// servingProcs is how many threads at most a stdio sidecar runs Go code on
// at once. A stdio sidecar answers one agent, one call after another, and
// most of a call's work is git's, in processes of their own; every
// processor the runtime keeps costs resident memory for the whole session
// (its allocation caches, a collector worker and the threads that come to
// run them). With the runtime's default, one per core, an idle sidecar
// held 0.5–1.7 MiB more on 8 and 16 than on 2 (docs/benchmarks.md, "An
// idle sidecar's memory").
const servingProcs = 2

// procsFor is the GOMAXPROCS a stdio sidecar runs with, given the
// environment's GOMAXPROCS and the runtime's current setting: the
// person's own GOMAXPROCS stands; otherwise at most servingProcs.
func procsFor(env string, current int) int {
	if env != "" || current <= servingProcs {
		return current
	}
	return servingProcs
}

// capProcs applies procsFor before a stdio sidecar builds its tools.
func capProcs() {
	n := runtime.GOMAXPROCS(0)
	if want := procsFor(os.Getenv("GOMAXPROCS"), n); want != n {
		runtime.GOMAXPROCS(want)
	}
}
