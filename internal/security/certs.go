package security

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
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

// Certs are the PEM files WriteCerts made: a CA (its key too, so brokers
// can issue their own certificates), a certificate the brokers serve
// (valid for every host given), and a client certificate, each signed by
// the CA.
type Certs struct {
	CA, CAKey, BrokerCert, BrokerKey, ClientCert, ClientKey string
}

// certLifetime is how long generated certificates stay valid: a run or a
// `gregor up` session, with room to spare.
const certLifetime = 7 * 24 * time.Hour

// WriteCerts makes a fresh CA and the broker and client certificates it
// signs in dir: what tests generate at run time (nothing is checked in).
// hosts are the names and IP addresses clients dial the brokers by.
func WriteCerts(dir string, hosts []string) (Certs, error) {
	ca, caKey, err := WriteCA(dir)
	if err != nil {
		return Certs{}, err
	}
	out := Certs{CA: ca, CAKey: caKey}
	if out.BrokerCert, out.BrokerKey, err = Issue(ca, caKey, "broker", append([]string{"localhost"}, hosts...), dir); err != nil {
		return Certs{}, err
	}
	if out.ClientCert, out.ClientKey, err = Issue(ca, caKey, "client", nil, dir); err != nil {
		return Certs{}, err
	}
	return out, nil
}

// WriteCA makes a fresh CA in dir: ca.pem and ca-key.pem. A booting
// runtime makes one per cluster and gives its brokers both files; each
// broker issues itself a certificate for the host it advertises (Issue),
// and the clients trust ca.pem.
func WriteCA(dir string) (cert, key string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", fmt.Errorf("certificates: %w", err)
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	now := time.Now().Add(-time.Hour) // clocks of brokers and clients may differ a little
	t := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: "gregor CA"},
		NotBefore: now, NotAfter: now.Add(certLifetime), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, t, t, &k.PublicKey, k)
	if err != nil {
		return "", "", err
	}
	cert, key = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem")
	if err := writePEM(cert, "CERTIFICATE", der, 0o644); err != nil {
		return "", "", err
	}
	return cert, key, writeKey(key, k)
}

// Issue signs a certificate named name for hosts (names and IP addresses;
// none: a client certificate) with the CA in caCert/caKey, written to dir
// as NAME.pem and NAME-key.pem. A host certificate is a client's too:
// brokers dial each other with it.
func Issue(caCert, caKey, name string, hosts []string, dir string) (cert, key string, err error) {
	ca, signer, err := loadCA(caCert, caKey)
	if err != nil {
		return "", "", err
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	now := time.Now().Add(-time.Hour)
	t := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: "gregor " + name},
		NotBefore: now, NotAfter: now.Add(certLifetime), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if len(hosts) > 0 {
		t.ExtKeyUsage = append(t.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		for _, h := range append([]string{"localhost", "127.0.0.1"}, hosts...) {
			if ip := net.ParseIP(h); ip != nil {
				t.IPAddresses = append(t.IPAddresses, ip)
			} else {
				t.DNSNames = append(t.DNSNames, h)
			}
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, t, ca, &k.PublicKey, signer)
	if err != nil {
		return "", "", fmt.Errorf("issuing %s's certificate: %w", name, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", err
	}
	cert, key = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	if err := writePEM(cert, "CERTIFICATE", der, 0o644); err != nil {
		return "", "", err
	}
	return cert, key, writeKey(key, k)
}

func loadCA(certPath, keyPath string) (*x509.Certificate, crypto.Signer, error) {
	cb, err := os.ReadFile(certPath)
	if err != nil {
		return nil, nil, fmt.Errorf("--tls-ca: %w", err)
	}
	kb, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, nil, fmt.Errorf("--tls-ca-key: %w", err)
	}
	cblk, _ := pem.Decode(cb)
	kblk, _ := pem.Decode(kb)
	if cblk == nil || kblk == nil {
		return nil, nil, errors.New("--tls-ca and --tls-ca-key: give PEM files")
	}
	ca, err := x509.ParseCertificate(cblk.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("--tls-ca: %w", err)
	}
	k, err := x509.ParsePKCS8PrivateKey(kblk.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("--tls-ca-key: %w", err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, nil, errors.New("--tls-ca-key: not a signing key")
	}
	return ca, signer, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

func writeKey(path string, k *ecdsa.PrivateKey) error {
	b, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return err
	}
	return writePEM(path, "PRIVATE KEY", b, 0o600)
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode)
}
