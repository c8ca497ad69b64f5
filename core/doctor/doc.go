// Package doctor owns the installation checks behind `sluice doctor` and
// `sluice-sidecar doctor`: each check says ok, warn or fail with a hint a
// person can act on. Checks only look; they never repair.
package doctor
