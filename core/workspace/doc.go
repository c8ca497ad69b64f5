// Package workspace owns disposable, isolated workspaces: importing trusted
// source, the hardened container runtime (Docker Engine API today; the Runtime
// interface is the seam for others), scoped file access, runs and their
// evidence, and sealing a workspace's commits into a proposal.
package workspace
