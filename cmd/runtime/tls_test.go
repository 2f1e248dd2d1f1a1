package main

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
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/agentmux/agentmux/internal/proctest"
)

// testCA signs certificates for the tests, which make their own.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // the CA certificate, PEM
	dir  string
}

func newTestCA(t *testing.T, dir, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &testCA{cert: cert, key: key, dir: dir, file: filepath.Join(dir, name+".pem")}
	writePEM(t, ca.file, "CERTIFICATE", der)
	return ca
}

// issue makes a certificate for 127.0.0.1 and localhost, good for serving and for
// presenting as a client, and returns its file and its key's.
func (ca *testCA) issue(t *testing.T, name string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(ca.dir, name+".pem"), filepath.Join(ca.dir, name+"-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", kder)
	return certFile, keyFile
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestTLSClusterAndClients: two servers whose routes and clients speak mutual TLS;
// a task submitted to the first runs on the second's agents. Clients without the CA,
// without a certificate, or with one another CA signed are refused, saying what to set.
func TestTLSClusterAndClients(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := newTestCA(t, dir, "ca")
	other := newTestCA(t, dir, "other-ca")
	ops := nuid.Next()
	clientPorts, routePorts := []int{proctest.FreePort(t), proctest.FreePort(t)}, []int{proctest.FreePort(t), proctest.FreePort(t)}
	manifests := make([]string, 2)
	for i := range 2 {
		cert, key := ca.issue(t, fmt.Sprintf("n%d", i+1))
		client, clientKey := ca.issue(t, fmt.Sprintf("cli%d", i+1))
		m := fmt.Sprintf(`[nats]
listen = "127.0.0.1:%d"
store_dir = %q
server_name = "n%d"
replicas = 1
user = "ops"
password_env = "T_TLS_OPS"
[nats.cluster]
name = "tls"
listen = "127.0.0.1:%d"
routes = ["nats://127.0.0.1:%d"]
[nats.tls]
cert = %q
key = %q
ca = %q
verify = true
client_cert = %q
client_key = %q
[[nats.users]]
name = "ops"
password_env = "T_TLS_OPS"
role = "operator"
[metrics]
addr = "127.0.0.1:0"
`, clientPorts[i], filepath.Join(dir, fmt.Sprintf("store%d", i)), i+1, routePorts[i], routePorts[1-i], cert, key, ca.file, client, clientKey) + simHost("")
		manifests[i] = filepath.Join(dir, fmt.Sprintf("n%d.toml", i+1))
		if err := os.WriteFile(manifests[i], []byte(m), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"T_TLS_OPS=" + ops}
	first := exec.Command(os.Args[0], "up", "-c", manifests[0], "--name", "n1", "--no-hosts")
	first.Env = env
	second := exec.Command(os.Args[0], "up", "-c", manifests[1], "--name", "n2")
	second.Env = env
	for _, p := range []*proc{startProc(t, first), startProc(t, second)} {
		until(t, "TLS node up", p.stderr, "node up")
	}

	// Through the first server's TLS listener, over the TLS routes, to the second's agent.
	submit := exec.Command(os.Args[0], "submit", "-c", manifests[0], "--id", "t-tls", "w", okScript, "--follow")
	submit.Env = env
	if p := startProc(t, submit); p.wait(t, 60*time.Second) != exitOK || !strings.Contains(p.stdout.String(), "all green") {
		t.Fatalf("a session over TLS: exit %d\n%s\n%s", p.code, p.stdout, p.stderr)
	}

	url := fmt.Sprintf("nats://127.0.0.1:%d", clientPorts[0])
	if nc, err := nats.Connect(url, nats.UserInfo("ops", ops)); err == nil {
		nc.Close()
		t.Fatal("a client that trusts no CA got in")
	}
	if nc, err := nats.Connect(url, nats.UserInfo("ops", ops), nats.RootCAs(ca.file)); err == nil {
		nc.Close()
		t.Fatal("a client without a certificate got in where verify = true")
	}
	stranger, strangerKey := other.issue(t, "stranger")
	if nc, err := nats.Connect(url, nats.UserInfo("ops", ops), nats.RootCAs(ca.file), nats.ClientCert(stranger, strangerKey)); err == nil {
		nc.Close()
		t.Fatal("a client whose certificate another CA signed got in")
	}
	// The CLI trusting the wrong CA says what to set.
	src, _ := os.ReadFile(manifests[0])
	wrongCA := filepath.Join(dir, "wrong-ca.toml")
	if err := os.WriteFile(wrongCA, []byte(strings.Replace(string(src), fmt.Sprintf("ca = %q", ca.file), fmt.Sprintf("ca = %q", other.file), 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	pending := exec.Command(os.Args[0], "pending", "-c", wrongCA)
	pending.Env = env
	if p := startProc(t, pending); p.wait(t, 30*time.Second) != exitError || !strings.Contains(p.stderr.String(), "set [nats.tls] ca to the CA that signed the server's certificate") {
		t.Fatalf("pending with the wrong CA: exit %d, %s", p.code, p.stderr)
	}
}
