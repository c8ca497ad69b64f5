// Package kubetest gives tests a real Kubernetes to talk to, in two sizes.
//
// ControlPlane starts etcd, kube-apiserver and a kube-controller-manager
// (namespaces, service accounts, resource quotas, garbage collection) once
// per test binary from the binaries build/k8s/cluster.sh builds into
// ${XDG_CACHE_HOME:-~/.cache}/sluice-k8s/<version>, on free ports in a
// temporary directory, and returns an admin *rest.Config. It has RBAC on,
// service-account signing keys (TokenRequest works) and the ResourceQuota
// admission plugin on, but no node: pods are admitted and stay Pending.
// The test package's TestMain calls Main, which stops it after the tests.
//
// Node returns the single-node cluster `make test` starts around the whole
// suite (build/scripts/with-cluster.sh, which exports SLUICE_K8S_BASE):
// pods run there without network, under runc or, with the RuntimeClass
// Cluster.GVisor, under gVisor. ImportImage copies an image
// from the Docker Engine into that node's containerd, since no registry is
// reachable.
//
// Missing binaries or a missing cluster skip the test saying why; with
// SLUICE_REQUIRE_E2E=1 they fail it, except where the host cannot run a
// node at all (not root, no cgroup v1, no mount namespaces), which is
// always a skip with the reason.
//
// Only tests import this package, so no binary links it.
package kubetest
