// Package podlink carries a confined session's Unix-socket connections
// between a Kubernetes pod and the host over one byte stream.
//
// A session that runs as a pod cannot reach the host's Unix sockets (the
// session sidecar's MCP socket, the launcher's egress proxy). One exec
// stream into the pod's keeper container (the stdin and stdout of
// `sluice-sidecar pod-link`, carried by the Kubernetes API) is the link:
// yamux multiplexes many connections over it. The pod side (Forward)
// listens on a Unix socket per name and opens a stream for each
// connection; the stream starts with the socket's name and a newline. The
// host side (Serve) accepts the streams and connects each to the Target of
// that name; a name it does not know closes the stream.
//
// Everything that arrives from the pod is untrusted: names are bounded and
// looked up, never used as paths, and a Target with BeforeCall reads the
// stream as the agent's MCP (newline-delimited JSON-RPC) and lets a
// tools/call through only once BeforeCall allowed it.
//
// Both directions of a connection close independently (half-close): the
// end of what one side writes reaches the other as EOF while the reverse
// direction goes on. When the link ends, every connection on both sides is
// closed.
package podlink
