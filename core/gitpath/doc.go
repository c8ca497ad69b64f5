// Package gitpath holds the one rule that decides whether a path inside a
// working tree names git's own metadata. Proposals, the workspace file
// tools and a workspace's seal all ask it, so that no two of them can
// disagree about what ".git" looks like.
package gitpath
