// Package workspacetest holds what tests of workspaces need from Docker
// and nothing in Sluice runs: a busybox image imported from the host
// (ImageRef, EnsureImage), so that no registry has to be reachable, and a
// real registry on 127.0.0.1 (StartRegistry) for pulls by digest.
//
// Only tests import it, so neither binary links it.
package workspacetest
