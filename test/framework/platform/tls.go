package platform

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Crossplane dials functions with mutual TLS only. `crossplane core init` makes a
// CA and a client certificate and stores them in two Secrets; in a cluster the
// function's pod gets a server certificate from the same CA. Out of a cluster the
// harness plays that part: it signs one server certificate for 127.0.0.1 that all
// function processes share.

// Secret keys, as Kubernetes' TLS Secret type and Crossplane's initializer name them.
const (
	keyCert = "tls.crt"
	keyKey  = "tls.key"
	keyCA   = "ca.crt"
)

// writeCertDir writes a folder with tls.crt, tls.key and ca.crt, the layout both
// core's --tls-client-certs-dir and function-sdk-go's --tls-certs-dir read.
func writeCertDir(dir string, cert, key, ca []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name, data := range map[string][]byte{keyCert: cert, keyKey: key, keyCA: ca} {
		if len(data) == 0 {
			return fmt.Errorf("%s: no %s", dir, name)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// signServerCert issues a server certificate for 127.0.0.1 from the CA's PEM
// certificate and key, and returns the new certificate and key as PEM.
func signServerCert(caCertPEM, caKeyPEM []byte) (certPEM, keyPEM []byte, err error) {
	ca, err := tls.X509KeyPair(caCertPEM, caKeyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("crossplane CA: %w", err)
	}
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		return nil, nil, fmt.Errorf("crossplane CA: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "functions.local"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(30 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if _, ok := ca.PrivateKey.(crypto.Signer); !ok {
		return nil, nil, errors.New("crossplane CA: key cannot sign")
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, ca.PrivateKey)
	if err != nil {
		return nil, nil, fmt.Errorf("sign function server certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}
