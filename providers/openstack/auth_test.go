package openstack

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// The upstream [Global] keys whose absence would reach other endpoints or act as another
// client: each is a config error when malformed, with its line.
func TestAuthKeyProblems(t *testing.T) {
	const base = "[Global]\nauth-url = https://k/v3\nusername = u\npassword = p\ntenant-id = t\n"
	for _, tc := range []struct {
		name, conf string
		want       string // "" means valid
	}{
		{"internal", base + "os-endpoint-type = internal\n", ""},
		{"internalURL", base + "os-endpoint-type = internalURL\n", ""},
		{"Admin", base + "os-endpoint-type = Admin\n", ""},
		{"bad endpoint type", base + "os-endpoint-type = private\n", `line 6: [Global] os-endpoint-type: must be public, internal or admin`},
		{"cert without key", base + "cert-file = /c.crt\n", "line 6: [Global] cert-file: cert-file and key-file go together"},
		{"unreadable pair", base + "cert-file = /nonexistent/c.crt\nkey-file = /nonexistent/c.key\n", "[Global] cert-file: cannot load the client certificate"},
		{"token alone", "[Global]\nauth-url = https://k/v3\ntoken = gAAAA-tok\ntenant-name = t\n", ""},
		{"trust with the user", base + "trust-id = tr\n", ""},
		{"trust with a trustee", "[Global]\nauth-url = https://k/v3\ntrust-id = tr\ntrustee-id = tu\ntrustee-password = tp\n", ""},
		{"trustee without password", "[Global]\nauth-url = https://k/v3\ntrust-id = tr\ntrustee-id = tu\n", "[Global] trustee-password: is required with trustee-id"},
		{"trustee without trust", base + "trustee-id = tu\ntrustee-password = tp\n", "[Global] trustee-id: trustee-id and trustee-password are used only with trust-id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(strings.NewReader(tc.conf))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// lookup makes one Nova call through a cloud made from conf.
func lookup(t *testing.T, f *fake.Cloud, conf string) error {
	t.Helper()
	c, err := New(strings.NewReader(conf))
	if err != nil {
		t.Fatal(err)
	}
	inst, _ := c.InstancesV2()
	id := f.AddServer(fake.ServerSpec{Name: "auth-node", IPs: []string{"10.0.0.77"}})
	_, err = inst.InstanceExists(context.Background(), node("auth-node", "openstack:///"+id))
	return err
}

// os-endpoint-type = internal: every service call goes to the catalog's internal endpoints
// (counted per interface at the fake); the default stays public.
func TestEndpointTypeSelectsTheInterface(t *testing.T) {
	for _, tc := range []struct{ line, want string }{{"", "public"}, {"os-endpoint-type = internal", "internal"}, {"os-endpoint-type = adminURL", "admin"}} {
		f := newFake(t, fake.Options{})
		conf := strings.Replace(f.CloudConfig(), "[LoadBalancer]", tc.line+"\n\n[LoadBalancer]", 1)
		if err := lookup(t, f, conf); err != nil {
			t.Fatalf("%q: %v", tc.line, err)
		}
		got := f.InterfaceCalls()
		if got[tc.want] == 0 || len(got) != 1 {
			t.Errorf("%q: calls per interface %v, want all on %s", tc.line, got, tc.want)
		}
	}
}

// token: an existing token logs in (Keystone's token method) with no password in the file.
func TestTokenLogsIn(t *testing.T) {
	f := newFake(t, fake.Options{})
	body := fmt.Sprintf(`{"auth":{"identity":{"methods":["password"],"password":{"user":{"name":%q,"password":%q,"domain":{"name":%q}}}},"scope":{"project":{"name":%q,"domain":{"name":%q}}}}}`,
		f.Username(), f.Password(), f.DomainName(), f.ProjectName(), f.DomainName())
	resp, err := http.Post(f.AuthURL()+"/auth/tokens", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	tok := resp.Header.Get("X-Subject-Token")
	if tok == "" {
		t.Fatalf("no token: %s", resp.Status)
	}
	conf := fmt.Sprintf("[Global]\nauth-url = %s\ntoken = %s\ntenant-name = %s\ndomain-name = %s\nregion = %s\n", f.AuthURL(), tok, f.ProjectName(), f.DomainName(), f.Region())
	if err := lookup(t, f, conf); err != nil {
		t.Fatalf("token login: %v", err)
	}
	bad := strings.Replace(conf, tok, "gAAAA-not-a-token", 1)
	if err := lookup(t, f, bad); err == nil {
		t.Error("an unknown token logged in")
	}
}

// trust-id: the token is scoped to the trust (OS-TRUST), by the trustee or by the file's user;
// a trust Keystone does not know is refused.
func TestTrustScopesTheToken(t *testing.T) {
	f := newFake(t, fake.Options{})
	byUser := strings.Replace(f.CloudConfig(), "[LoadBalancer]", "trust-id = "+f.TrustID()+"\n\n[LoadBalancer]", 1)
	if err := lookup(t, f, byUser); err != nil {
		t.Fatalf("trust with the user's credentials: %v", err)
	}
	trustee := fmt.Sprintf("[Global]\nauth-url = %s\ntrust-id = %s\ntrustee-id = uid-%s\ntrustee-password = %q\nregion = %s\n", f.AuthURL(), f.TrustID(), f.Username(), f.Password(), f.Region())
	if err := lookup(t, f, trustee); err != nil {
		t.Fatalf("trust with the trustee's credentials: %v", err)
	}
	unknown := strings.Replace(trustee, "trust-id = "+f.TrustID(), "trust-id = trust-other", 1)
	if err := lookup(t, f, unknown); err == nil {
		t.Error("an unknown trust logged in")
	}
}

// cert-file and key-file: the client certificate is presented in the TLS handshake; a server
// that requires one refuses the same transport without it.
func TestClientCertificateIsPresented(t *testing.T) {
	dir := t.TempDir()
	caCert, caKey := selfSigned(t, "test-ca", nil, nil)
	clientCert, clientKey := selfSigned(t, "ccm-client", caCert, caKey)
	certFile, keyFile := filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")
	writePEM(t, certFile, "CERTIFICATE", clientCert.Raw)
	der, err := x509.MarshalECPrivateKey(clientKey)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, keyFile, "EC PRIVATE KEY", der)

	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	var presented string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		presented = r.TLS.PeerCertificates[0].Subject.CommonName
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	get := func(conf string) error { return getWithConfig(t, conf, srv.URL) }
	base := "[Global]\nauth-url = https://k/v3\nusername = u\npassword = p\ntenant-id = t\ntls-insecure = true\n"
	if err := get(base + "cert-file = " + certFile + "\nkey-file = " + keyFile + "\n"); err != nil || presented != "ccm-client" {
		t.Fatalf("with cert-file and key-file: %v (server saw %q)", err, presented)
	}
	if err := get(base); err == nil {
		t.Error("without a client certificate the server accepted the handshake")
	}
}

// selfSigned makes an ECDSA certificate for cn, signed by parent (or by itself).
func selfSigned(t *testing.T, cn string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// getWithConfig GETs url through the transport the cloud.conf conf sets up (its CA, client
// certificate and tls-insecure), answering the request's error.
func getWithConfig(t *testing.T, conf, url string) error {
	t.Helper()
	c, err := New(strings.NewReader(conf))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := c.sess.transport()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(url)
	if err == nil {
		resp.Body.Close()
	}
	return err
}
