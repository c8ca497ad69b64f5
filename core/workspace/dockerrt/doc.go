// Package dockerrt is the workspace Runtime backed by the local Docker
// Engine API: one hardened container per run, created, attached, waited
// for and removed (docker.go); the last gate every container configuration
// passes before the Engine sees it (ValidateContainerConfig, validate.go);
// workspace images by ID (image.go); and the containers of confined
// sessions (session.go).
//
// It is the only Sluice package that links the Docker client. The app
// links it and serves its calls to sidecars over the gateway
// (gateway.Runtime); the sidecar never does, so an idle sidecar carries
// neither the client nor its start-up work.
package dockerrt
