// Package app is the Sluice application: the only package that imports
// Wails. It wires the core packages together (gateway, journal, executor,
// audit) and presents them to the person, either in a desktop window or, for
// machines without a display, as the same UI served on loopback by
// `sluice serve`.
//
// The UI reaches Go through one API type whose methods are both Wails
// bindings and the JSON handlers of the headless server, so the two front
// doors cannot drift apart.
package app
