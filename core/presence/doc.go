// Package presence owns the presence files that each sidecar keeps under the
// state directory, and the detection of other agents working in a
// repository. Presence is informational: nothing here ever blocks a proposal.
package presence
