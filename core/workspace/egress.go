package workspace

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
)

// Egress. A run without a grant has no network at all (NetworkMode none:
// only a loopback interface). A run of a workspace that a human granted
// domains to joins the egress network instead: a Docker network marked
// internal, which gets no route out of the host and whose forwarding to
// other interfaces Docker drops. The host's own address on that network
// (its gateway) is where Sluice's allowlisting proxy listens, and the run
// gets HTTP_PROXY/HTTPS_PROXY pointing there with per-run credentials.
//
// What the internal network does not stop: packets to the host itself are
// delivered locally, not forwarded, so a container on it can reach every
// host service listening on all addresses, not only the proxy. When Sluice
// runs as root, EgressFirewall closes that with two iptables rules on the
// network's bridge (accept TCP to the proxy port, drop everything else).
// Without root there is no unprivileged way to do so on Docker Engine 20.10,
// and the docs say so.

type egressHost struct {
	net      EgressNetwork
	proxy    *Proxy
	srv      *http.Server
	port     int
	firewall *firewall
}

func (e *egressHost) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := e.srv.Shutdown(ctx)
	if e.firewall != nil {
		err = errors.Join(err, e.firewall.remove())
	}
	return err
}

// ensureEgress starts the proxy on the egress network's gateway once.
func (m *Manager) ensureEgress(ctx context.Context) (*egressHost, error) {
	m.egressMu.Lock()
	defer m.egressMu.Unlock()
	if m.egress != nil {
		return m.egress, nil
	}
	en, err := m.opts.Runtime.EgressNetwork(ctx)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(en.Gateway, "0"))
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot start the egress proxy on the egress network")
	}
	port := ln.Addr().(*net.TCPAddr).Port
	var fw *firewall
	if m.opts.EgressFirewall {
		fw, err = installFirewall(en.Bridge, en.Gateway, port)
		if err != nil {
			ln.Close()
			return nil, err
		}
	}
	p := NewProxy(func(d Denial) {
		m.log.Info("workspace: egress denied", "workspace", d.WorkspaceID, "run", d.RunID, "host", d.Host, "reason", d.Reason)
		if m.opts.OnEgressDenied != nil {
			m.opts.OnEgressDenied(d)
		}
	})
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	m.egress = &egressHost{net: en, proxy: p, srv: srv, port: port, firewall: fw}
	return m.egress, nil
}

// GrantEgress sets the exact hosts (host or host:port) a workspace's runs
// may reach through the proxy, replacing earlier grants. An empty list
// revokes egress. It is a human's decision: no agent tool may call it.
func (m *Manager) GrantEgress(id string, hosts []string) error {
	norm, err := NormalizeEgress(hosts)
	if err != nil {
		return err
	}
	if len(norm) > 0 {
		if err := m.egressPossible(); err != nil {
			return err
		}
	}
	w, unlock, err := m.open(id, true, len(norm) > 0)
	if err != nil {
		return err
	}
	defer unlock()
	w.Egress = norm
	w.LastUsedAt = m.now()
	return m.writeMeta(w)
}

// egressPossible refuses a grant that no run could use: under a runtime
// without a network (gVisor registered with --network=none) a granted run
// would fail, so the grant fails now, where the person makes it. Without
// a reachable runtime the configured name decides: runsc is refused.
func (m *Manager) egressPossible() error {
	if m.opts.Runtime == nil {
		if m.opts.RuntimeName == "runsc" {
			return errEgressNoNetwork("runsc")
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := m.checkRuntime(ctx)
	if err != nil {
		return err
	}
	if info.NoNetwork {
		return errEgressNoNetwork(info.Name)
	}
	return nil
}

// firewall is the pair of INPUT rules that confine the egress bridge to
// the proxy port.
type firewall struct {
	iptables string
	accept   []string
	drop     []string
}

func installFirewall(bridge, gateway string, port int) (*firewall, error) {
	if os.Geteuid() != 0 {
		return nil, &errcode.Error{Code: errcode.Unsupported, Msg: "the egress firewall needs root; turn EgressFirewall off or run Sluice as root"}
	}
	ipt := ""
	for _, p := range []string{"/usr/sbin/iptables", "/sbin/iptables", "/usr/bin/iptables"} {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			ipt = p
			break
		}
	}
	if ipt == "" {
		return nil, &errcode.Error{Code: errcode.Unsupported, Msg: "the egress firewall needs iptables, which is not installed"}
	}
	f := &firewall{
		iptables: ipt,
		accept:   []string{"INPUT", "-i", bridge, "-p", "tcp", "-d", gateway, "--dport", strconv.Itoa(port), "-j", "ACCEPT"},
		drop:     []string{"INPUT", "-i", bridge, "-j", "DROP"},
	}
	// The drop rule is shared by every Sluice store on this host and stays;
	// each store's accept rule goes above it.
	if f.run("-C", f.drop...) != nil {
		if err := f.run("-I", append([]string{"INPUT", "1"}, f.drop[1:]...)...); err != nil {
			return nil, errcode.Wrap(errcode.Internal, err, "cannot install the egress firewall")
		}
	}
	if err := f.run("-I", append([]string{"INPUT", "1"}, f.accept[1:]...)...); err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot install the egress firewall")
	}
	return f, nil
}

func (f *firewall) run(op string, rule ...string) error {
	args := append([]string{"-w", "5", op}, rule...)
	cmd := exec.Command(f.iptables, args...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return errors.New(err.Error() + ": " + string(out))
	}
	return nil
}

// remove deletes this store's accept rule, and the shared drop rule when
// no other store's accept rule for the bridge is left (so that turning
// the firewall off later does not leave the proxy unreachable).
func (f *firewall) remove() error {
	if err := f.run("-D", f.accept...); err != nil {
		return err
	}
	out, err := exec.Command(f.iptables, "-w", "5", "-S", "INPUT").Output()
	if err != nil {
		return nil
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "-i "+f.accept[2]+" ") && strings.HasSuffix(strings.TrimSpace(line), "-j ACCEPT") {
			return nil
		}
	}
	return f.run("-D", f.drop...)
}
