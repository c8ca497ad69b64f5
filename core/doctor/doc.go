// Package doctor owns the doctor command that `sluice doctor` and
// `sluice-sidecar doctor` both run, and its installation checks: each
// check says ok, warn or fail with a hint a person can act on. Checks only
// look; they never repair.
package doctor
