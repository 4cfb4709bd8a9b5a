package security

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Certs are the PEM files WriteCerts made: a CA, a certificate the brokers
// serve (valid for every host given), and a client certificate, each
// signed by the CA.
type Certs struct {
	CA, BrokerCert, BrokerKey, ClientCert, ClientKey string
}

// certLifetime is how long generated certificates stay valid: a run or a
// `gregor up` session, with room to spare.
const certLifetime = 7 * 24 * time.Hour

// WriteCerts makes a fresh CA and the broker and client certificates it
// signs in dir: what a booting runtime gives its brokers and what tests
// generate at run time (nothing is checked in). hosts are the names and
// IP addresses clients dial the brokers by.
func WriteCerts(dir string, hosts []string) (Certs, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Certs{}, fmt.Errorf("certificates: %w", err)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Certs{}, err
	}
	now := time.Now().Add(-time.Hour) // clocks of brokers and clients may differ a little
	caTmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: "gregor test CA"},
		NotBefore: now, NotAfter: now.Add(certLifetime), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return Certs{}, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	out := Certs{CA: filepath.Join(dir, "ca.pem"),
		BrokerCert: filepath.Join(dir, "broker.pem"), BrokerKey: filepath.Join(dir, "broker-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client-key.pem")}
	if err := writePEM(out.CA, "CERTIFICATE", caDER, 0o644); err != nil {
		return Certs{}, err
	}
	leaf := func(cn string, usage x509.ExtKeyUsage, certPath, keyPath string) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		t := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: cn},
			NotBefore: now, NotAfter: now.Add(certLifetime), KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{usage}}
		if usage == x509.ExtKeyUsageServerAuth {
			// Brokers dial each other too: the same certificate is also a client's.
			t.ExtKeyUsage = append(t.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
			for _, h := range append([]string{"localhost"}, hosts...) {
				if ip := net.ParseIP(h); ip != nil {
					t.IPAddresses = append(t.IPAddresses, ip)
				} else {
					t.DNSNames = append(t.DNSNames, h)
				}
			}
			t.IPAddresses = append(t.IPAddresses, net.IPv4(127, 0, 0, 1))
		}
		der, err := x509.CreateCertificate(rand.Reader, t, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		kb, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return err
		}
		if err := writePEM(certPath, "CERTIFICATE", der, 0o644); err != nil {
			return err
		}
		return writePEM(keyPath, "PRIVATE KEY", kb, 0o600)
	}
	if err := leaf("gregor broker", x509.ExtKeyUsageServerAuth, out.BrokerCert, out.BrokerKey); err != nil {
		return Certs{}, fmt.Errorf("broker certificate: %w", err)
	}
	if err := leaf("gregor client", x509.ExtKeyUsageClientAuth, out.ClientCert, out.ClientKey); err != nil {
		return Certs{}, fmt.Errorf("client certificate: %w", err)
	}
	return out, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode)
}
