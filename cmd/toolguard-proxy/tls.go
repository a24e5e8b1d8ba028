package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// maxPEMFile bounds what is read of -tls-cert and -tls-key: a chain of a
// few certificates and a key, not a bundle of every CA.
const maxPEMFile = 1 << 20

// certificate is the pair of -tls-cert and -tls-key as last loaded. The
// traffic listener's tls.Config reads it at each handshake
// (GetCertificate), so a reload (SIGHUP) serves the connections made from
// then on and leaves those already established as they are. It is safe
// for concurrent use.
type certificate struct {
	certFile, keyFile string
	cur               atomic.Pointer[tls.Certificate]
}

// newCertificate returns the certificate holding pair, loaded from
// certFile and keyFile.
func newCertificate(certFile, keyFile string, pair *tls.Certificate) *certificate {
	c := &certificate{certFile: certFile, keyFile: keyFile}
	c.cur.Store(pair)
	return c
}

// get is the tls.Config's GetCertificate: the pair last loaded, whatever
// the client asks for (the proxy serves one name, or whatever name its
// clients reach it by).
func (c *certificate) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return c.cur.Load(), nil
}

// tlsConfig is the traffic port's TLS configuration: TLS 1.2 and up, the
// certificate of c, HTTP/1.1 only. The plain -listen serves HTTP/1.1 only
// too (no h2c), so TLS changes nothing of how requests are served: a
// WebSocket upgrade (which HTTP/2 has no Hijack for), the body deadline,
// streams.
func (c *certificate) tlsConfig() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: c.get,
		NextProtos:     []string{"http/1.1"},
	}
}

// listen wraps ln in TLS with c's certificate.
func (c *certificate) listen(ln net.Listener) net.Listener {
	return tls.NewListener(ln, c.tlsConfig())
}

// loadPair reads and checks the certificate chain of certFile (-tls-cert)
// and its private key in keyFile (-tls-key), both PEM. Its error is one
// line naming the flag and file at fault: a file that cannot be read, a
// certificate file without a certificate that parses, a key that does not
// parse or does not match the certificate. certFlag and keyFlag name the
// flags as the user set them (cfg.src).
func loadPair(certFlag, certFile, keyFlag, keyFile string) (*tls.Certificate, error) {
	certPEM, err := readPEMFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", certFlag, certFile, err)
	}
	keyPEM, err := readPEMFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", keyFlag, keyFile, err)
	}
	if err := checkCertPEM(certPEM); err != nil {
		return nil, fmt.Errorf("%s %s: %w", certFlag, certFile, err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// The certificate parsed: what is wrong is the key, or the pair
		// ("tls: private key does not match public key"). crypto/tls's
		// errors quote no key material.
		return nil, fmt.Errorf("%s %s: %w (the key of %s %s)", keyFlag, keyFile, err, certFlag, certFile)
	}
	return &pair, nil
}

// readPEMFile reads path, refusing a file larger than maxPEMFile.
func readPEMFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, unwrapPath(err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPEMFile+1))
	if err != nil {
		return nil, unwrapPath(err)
	}
	if len(b) > maxPEMFile {
		return nil, fmt.Errorf("larger than %d bytes: not a PEM certificate or key", maxPEMFile)
	}
	return b, nil
}

// checkCertPEM reports what is wrong with a -tls-cert file: no PEM
// CERTIFICATE block, or one that does not parse.
func checkCertPEM(b []byte) error {
	found := false
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return fmt.Errorf("a certificate does not parse: %w", err)
		}
		found = true
	}
	if !found {
		return errors.New("no PEM CERTIFICATE block: want the server's certificate (and its chain), PEM-encoded")
	}
	return nil
}

// certAttrs are the log fields that say which certificate pair is: its
// serial number (serialHex), subject and expiry.
func certAttrs(pair *tls.Certificate) []slog.Attr {
	leaf := pair.Leaf
	if leaf == nil {
		var err error
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil
		}
	}
	return []slog.Attr{
		slog.String("serial", serialHex(leaf)),
		slog.String("subject", leaf.Subject.String()),
		slog.String("not_after", leaf.NotAfter.UTC().Format(time.RFC3339)),
	}
}

// reloadCert re-reads -tls-cert and -tls-key (on SIGHUP): the new pair
// serves the connections made from then on; connections already
// established keep the one they were made with. A pair that cannot be
// read, does not parse or does not match changes nothing: the pair loaded
// before stays, and the log says why.
func (s *server) reloadCert() {
	c := s.cert
	pair, err := loadPair(s.cfg.src("tls-cert"), c.certFile, s.cfg.src("tls-key"), c.keyFile)
	if err != nil {
		s.log.LogAttrs(context.Background(), slog.LevelError, "toolguard-proxy: the TLS certificate was not reloaded: the one loaded before stays",
			slog.String("error", err.Error()))
		return
	}
	c.cur.Store(pair)
	s.log.LogAttrs(context.Background(), slog.LevelInfo, "toolguard-proxy: the TLS certificate was reloaded", certAttrs(pair)...)
}

// serialHex is a certificate's serial number as openssl x509 -serial
// prints it (upper-case hex, an even number of digits), so that the log
// can be compared with the file.
func serialHex(c *x509.Certificate) string {
	h := strings.ToUpper(c.SerialNumber.Text(16))
	if len(h)%2 == 1 {
		h = "0" + h
	}
	return h
}
