package kubetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is what the control plane is started with: a CA, the API server's
// serving certificate, an admin client certificate (group system:masters)
// and the service-account signing key. ECDSA keys, because they take
// microseconds to make and every test binary makes its own.
type pki struct {
	caPEM, adminCertPEM, adminKeyPEM []byte
	// files for the processes' flags
	caFile, serverCert, serverKey, saKey, saPub, adminCert, adminKey string
}

func newPKI(dir string) (*pki, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "sluice-kubetest-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	issue := func(serial int64, subject pkix.Name, usage x509.ExtKeyUsage, ips []net.IP, dns []string) (certPEM, keyPEM []byte, err error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      subject,
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(7 * 24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  ips,
			DNSNames:     dns,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		kder, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return nil, nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), nil
	}
	p := &pki{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})}
	srvCert, srvKey, err := issue(2, pkix.Name{CommonName: "kube-apiserver"}, x509.ExtKeyUsageServerAuth,
		[]net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(10, 96, 0, 1)},
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"})
	if err != nil {
		return nil, err
	}
	p.adminCertPEM, p.adminKeyPEM, err = issue(3, pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}},
		x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return nil, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	saDER, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		return nil, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	files := []struct {
		dst  *string
		name string
		data []byte
	}{
		{&p.caFile, "ca.crt", p.caPEM},
		{&p.serverCert, "apiserver.crt", srvCert},
		{&p.serverKey, "apiserver.key", srvKey},
		{&p.saKey, "sa.key", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: saDER})},
		{&p.saPub, "sa.pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER})},
		{&p.adminCert, "admin.crt", p.adminCertPEM},
		{&p.adminKey, "admin.key", p.adminKeyPEM},
	}
	for _, f := range files {
		*f.dst = filepath.Join(dir, f.name)
		if err := os.WriteFile(*f.dst, f.data, 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}
