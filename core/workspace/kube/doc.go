// Package kube is the Kubernetes runtime of workspaces: each run is one
// pod, with its own Secret and deny-all NetworkPolicy, in a configured
// namespace, created, followed and deleted through the API server with
// client-go. It implements workspace.Runtime; runtime.go says why it is
// built as it is, validate.go what every pod must hold, pidlimit.go how
// each pod is held to a PID limit of its own, doctor.go what a cluster
// must grant it (RoleYAML) and what Doctor checks.
//
// Tests run against a real API server and etcd (kubetest.ControlPlane),
// playing the kubelet where a node's answer is needed, and against a real
// single-node cluster (kubetest.Node) when make test started one.
package kube
