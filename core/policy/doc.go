// Package policy owns the optional agent policy file: which operations, refs
// and path prefixes each agent may propose, and the auto-approve rules for
// low-risk work. A policy file that is configured but missing or malformed is
// an error at load, never an empty policy.
package policy
