// Package intake is where a proposal arrives in the app: the gateway's
// server decodes a sidecar's request and hands it here (Intake is its
// gateway.Backend). Intake checks the proposal again instead of trusting
// the sidecar (its digest, agent, clock, and every path against the
// allowed roots and Sluice's own places), has its outcome sealed (its
// Sealer, the executor, opens and locks the repositories and has
// core/apply/seal compute what the card shows), decides what the policy
// says, stores it in the journal, lets a rule approve it,
// and keeps the sealed objects' ref. It also answers the sidecar's reads
// of its own proposals (status, wait, cancel) and of restore points.
//
// Nothing here decides a proposal for a person: approving and rejecting
// are the app's in-process API, reachable from its UI only.
package intake
