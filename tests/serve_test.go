package tests

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/edge/rest"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest/openapitest"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// TestServe runs the server beside the CLI: credentials issued and revoked
// by the CLI take effect on the running server, the operational endpoints
// answer, oversized headers are refused, and SIGTERM stops it cleanly.
func TestServe(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		acc := b.createAccount(t, "Acme")
		num := b.addNumber(t, acc.AccountID, "+14155550100")
		// No auth cache, so that a revocation by another process shows at once.
		srv := b.serve(t, "--auth-cache-ttl", "0")
		require.True(t, strings.HasPrefix(srv.URL, "http://127.0.0.1:"), "listening URL %q", srv.URL)
		c := srv.client(t)

		r := c.Do(http.MethodGet, "/healthz", nil)
		require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
		r = c.Do(http.MethodGet, "/readyz", nil)
		require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))

		path := "/v1/accounts/" + acc.AccountID
		r = c.Do(http.MethodGet, path, nil, auth(acc.APIKey, acc.APISecret)...)
		require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
		data := accountData(t, r)
		require.Equal(t, acc.AccountID, data["account_id"])
		require.Equal(t, "Acme", data["name"])
		require.Equal(t, []string{num.Number}, numbersOf(t, data))

		// A second key works until the CLI revokes it, while the server runs.
		// A second replica with a one-second auth cache has the key cached
		// when it is revoked; it must refuse it within that second.
		const ttl = time.Second
		cached := b.serve(t, "--auth-cache-ttl", ttl.String()).client(t)
		var second issuedKey
		b.cliJSON(t, &second, "keys", "create", "--account", acc.AccountID)
		secondAuth := auth(second.APIKey, second.APISecret)
		r = c.Do(http.MethodGet, path, nil, secondAuth...)
		require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
		r = cached.Do(http.MethodGet, path, nil, secondAuth...)
		require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))

		var revoked listedKey
		b.cliJSON(t, &revoked, "keys", "revoke", "--account", acc.AccountID, "--key", second.KeyID)
		revokedAt := time.Now()
		r = c.Do(http.MethodGet, path, nil, secondAuth...)
		require.Equal(t, http.StatusUnauthorized, r.StatusCode, string(r.Body))
		r = c.Do(http.MethodGet, path, nil, auth(acc.APIKey, acc.APISecret)...)
		require.Equal(t, http.StatusOK, r.StatusCode, "the other key still works: %s", r.Body)
		for {
			r = cached.Do(http.MethodGet, path, nil, secondAuth...)
			if r.StatusCode == http.StatusUnauthorized {
				break
			}
			require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
			require.Less(t, time.Since(revokedAt), ttl+2*time.Second, "a revoked key outlived the auth cache TTL")
			time.Sleep(50 * time.Millisecond)
		}

		r = c.Do(http.MethodGet, "/metrics", nil)
		require.Equal(t, http.StatusOK, r.StatusCode)
		require.Contains(t, string(r.Body), "switchboard_http_requests_total")
		// Requests are counted by route template, never by raw path.
		require.Regexp(t, `switchboard_http_requests_total\{code="401",method="GET",route="/v1/accounts/\{accountId\}"\} 1\n`, string(r.Body))
		require.NotContains(t, string(r.Body), acc.AccountID)
		for _, name := range []string{"switchboard_db_shared_batches_total", "switchboard_db_shared_units_total", "switchboard_db_shared_redone_total", "switchboard_db_shared_waiting"} {
			require.Regexp(t, name+` \d+\n`, string(r.Body), "the shared transactions' counters are exported")
		}

		// A plain client on purpose: 431 comes from net/http itself, before
		// any handler, and the OpenAPI document only describes it in prose.
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/healthz", nil)
		require.NoError(t, err)
		req.Header.Set("X-Padding", strings.Repeat("a", 100<<10))
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)

		// The server still serves after refusing that request.
		r = c.Do(http.MethodGet, "/healthz", nil)
		require.Equal(t, http.StatusOK, r.StatusCode)

		start := time.Now()
		srv.stop(t)
		require.Less(t, time.Since(start), 5*time.Second, "shutdown of an idle server")
	})
}

// TestServeGracefulShutdownFinishesInFlightRequests sends SIGTERM while a
// request body is still arriving: the request completes and is committed,
// then the process exits cleanly.
func TestServeGracefulShutdownFinishesInFlightRequests(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		acc := b.createAccount(t, "Before")
		srv := b.serve(t)

		body := []byte(`{"name": "After the signal"}`)
		pr, pw := io.Pipe()
		defer pw.Close()
		req, err := http.NewRequest(http.MethodPatch, srv.URL+"/v1/accounts/"+acc.AccountID, pr)
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-API-Key", acc.APIKey)
		req.Header.Set("X-API-Secret", acc.APISecret)

		// openapitest.Client reads a request body whole before sending it, so
		// this streamed request goes through sendValidated, which applies the
		// same OpenAPI validation to the response.
		type result struct {
			resp openapitest.Response
			err  error
		}
		done := make(chan result, 1)
		go func() {
			r, err := sendValidated(&http.Client{Timeout: 30 * time.Second}, req, body)
			done <- result{r, err}
		}()

		half := len(body) / 2
		_, err = pw.Write(body[:half])
		require.NoError(t, err)
		// Give the server time to read the headers and enter the handler,
		// which now waits for the rest of the body.
		time.Sleep(200 * time.Millisecond)
		srv.signal(t, syscall.SIGTERM)
		time.Sleep(300 * time.Millisecond)
		select {
		case <-srv.done:
			t.Fatalf("server exited (code %d) with a request in flight", srv.code)
		default:
		}
		_, err = pw.Write(body[half:])
		require.NoError(t, err)
		require.NoError(t, pw.Close())

		var res result
		select {
		case res = <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("the in-flight request did not complete")
		}
		require.NoError(t, res.err)
		require.Equal(t, http.StatusOK, res.resp.StatusCode, string(res.resp.Body))
		require.Equal(t, "After the signal", accountData(t, res.resp)["name"])
		require.True(t, res.resp.Close, "the response was written during shutdown (Connection: close)")

		require.Equal(t, 0, srv.waitExit(t, exitTimeout), "exit code after SIGTERM")

		var accounts []listedAccount
		b.cliJSON(t, &accounts, "accounts", "list")
		require.Len(t, accounts, 1)
		require.Equal(t, "After the signal", accounts[0].Name)
	})
}

// demoCurl is the request `serve --demo` prints.
var demoCurl = regexp.MustCompile(`(?m)^\s*account id:\s+(acc_\S+)\n\s*api key:\s+(swk_\S+)\n\s*api secret:\s+(sws_\S+)[\s\S]*` +
	`curl -s (\S+) \\\n\s*-H 'X-API-Key: (\S+)' \\\n\s*-H 'X-API-Secret: (\S+)'\n`)

// demoExisting is what `serve --demo` prints when accounts exist.
var demoExisting = regexp.MustCompile(`running at \S+ \(accounts: (acc_[^)]+)\)`)

// TestServeDemo follows the newcomer's path: `serve --demo` on an empty
// database prints a working curl command; a second start creates nothing.
func TestServeDemo(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupEmpty(t, dialect)
		srv := b.serve(t, "--demo")
		m := srv.waitStdout(t, demoCurl)
		accountID, key, secret, curlURL := m[1], m[2], m[3], m[4]
		require.Equal(t, key, m[5], "the curl line uses the printed key")
		require.Equal(t, secret, m[6], "the curl line uses the printed secret")

		u, err := url.Parse(curlURL)
		require.NoError(t, err)
		require.Equal(t, srv.URL, u.Scheme+"://"+u.Host, "the curl line targets the server")
		require.Equal(t, "/v1/accounts/"+accountID, u.Path)
		r := openapitest.New(t, srv.URL).Do(http.MethodGet, u.Path, nil, auth(key, secret)...)
		require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
		data := accountData(t, r)
		require.Equal(t, accountID, data["account_id"])
		require.Len(t, numbersOf(t, data), 1, "the demo account has a sandbox number")
		srv.stop(t)

		again := b.serve(t, "--demo")
		m = again.waitStdout(t, demoExisting)
		require.Equal(t, accountID, m[1])
		require.NotContains(t, again.stdout.String(), "api secret")
		again.stop(t)

		var accounts []listedAccount
		b.cliJSON(t, &accounts, "accounts", "list")
		require.Len(t, accounts, 1, "the second start created no account")
		require.Equal(t, accountID, accounts[0].AccountID)
	})
}

// TestServeReplicasStartTogether starts three servers at once on one empty
// database: the migration lock lets all of them come up, and each serves
// data written by the CLI.
func TestServeReplicasStartTogether(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupEmpty(t, dialect)
		// Replicas must share a key; give one on SQLite too.
		b.env = []string{"SWITCHBOARD_SECRET_KEY=" + newSecretKey(t)}
		replicas := make([]*serverProc, 3)
		for i := range replicas {
			replicas[i] = launchServer(t, b.env, "--database-url", b.dbURL)
		}
		for _, srv := range replicas {
			srv.waitListening(t)
			srv.waitReady(t)
		}

		acc := b.createAccount(t, "Shared")
		for _, srv := range replicas {
			r := srv.client(t).Do(http.MethodGet, "/v1/accounts/"+acc.AccountID, nil, auth(acc.APIKey, acc.APISecret)...)
			require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
			require.Equal(t, "Shared", accountData(t, r)["name"])
		}

		for _, srv := range replicas {
			srv.signal(t, syscall.SIGTERM)
		}
		for _, srv := range replicas {
			require.Equal(t, 0, srv.waitExit(t, exitTimeout), "replica exit code after SIGTERM")
		}
	})
}

// TestServeTLS serves HTTPS from a certificate pair given by flags.
func TestServeTLS(t *testing.T) {
	t.Parallel()
	certFile, keyFile, roots := writeSelfSignedCert(t)
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		srv := b.serve(t, "--tls-cert-file", certFile, "--tls-key-file", keyFile)
		require.True(t, strings.HasPrefix(srv.URL, "https://127.0.0.1:"), "listening URL %q", srv.URL)

		// openapitest.Client cannot trust a private root, so this goes
		// through sendValidated, which applies the same OpenAPI validation.
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
		defer client.CloseIdleConnections()
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/healthz", nil)
		require.NoError(t, err)
		r, err := sendValidated(client, req, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.StatusCode)
		require.NotNil(t, r.TLS, "the response came over TLS")

		// A client that does not trust the certificate is refused.
		_, err = (&http.Client{Timeout: 10 * time.Second}).Get(srv.URL + "/healthz")
		require.Error(t, err)

		acc := b.createAccount(t, "Secure")
		req, err = http.NewRequest(http.MethodGet, srv.URL+"/v1/accounts/"+acc.AccountID, nil)
		require.NoError(t, err)
		req.Header.Set("X-API-Key", acc.APIKey)
		req.Header.Set("X-API-Secret", acc.APISecret)
		r, err = sendValidated(client, req, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.StatusCode, string(r.Body))
		srv.stop(t)

		stdout, stderr, code := runCLI(t, b.env, "serve", "--addr", "127.0.0.1:0", "--database-url", b.dbURL,
			"--tls-cert-file", filepath.Join(t.TempDir(), "missing.pem"), "--tls-key-file", keyFile)
		msg := requireOneLineError(t, stdout, stderr, code)
		require.Contains(t, msg, "TLS certificate")
	})
}

// TestServeUnreachableDatabase checks that serve gives up quickly, with one
// line, when its database does not answer.
func TestServeUnreachableDatabase(t *testing.T) {
	t.Parallel()
	start := time.Now()
	stdout, stderr, code := runCLI(t, nil, "serve", "--addr", "127.0.0.1:0",
		"--database-url", "postgres://postgres@127.0.0.1:1/x?sslmode=disable", "--secret-key", newSecretKey(t))
	msg := requireOneLineError(t, stdout, stderr, code)
	require.Contains(t, msg, "unreachable")
	require.Less(t, time.Since(start), 15*time.Second)
}

// writeSelfSignedCert writes a self-signed ECDSA certificate for 127.0.0.1
// and its key as PEM files, and returns a pool that trusts it.
func writeSelfSignedCert(t *testing.T) (certFile, keyFile string, roots *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)

	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600))
	roots = x509.NewCertPool()
	roots.AddCert(cert)
	return certFile, keyFile, roots
}

// TestServeAnswersWrongMethods checks every path of the OpenAPI document on
// the real server: a method the document does not give the path is answered
// 405 with the Allow header naming the methods it does give, never 404.
func TestServeAnswersWrongMethods(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	acc := b.createAccount(t, "Acme")
	srv := b.serve(t)
	c := srv.client(t)
	doc, err := openapi3.NewLoader().LoadFromData(rest.OpenAPIYAML)
	require.NoError(t, err)
	param := regexp.MustCompile(`\{[^}]+\}`)
	checked := 0
	for path, item := range doc.Paths.Map() {
		if strings.HasPrefix(path, "/graphql") {
			continue
		}
		var documented []string
		for m := range item.Operations() {
			documented = append(documented, m)
		}
		slices.Sort(documented)
		concrete := param.ReplaceAllString(path, acc.AccountID)
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			if slices.Contains(documented, m) {
				continue
			}
			r := c.Do(m, concrete, nil, auth(acc.APIKey, acc.APISecret)...)
			require.Equal(t, http.StatusMethodNotAllowed, r.StatusCode, "%s %s: %s", m, path, r.Body)
			require.Contains(t, string(r.Body), "method_not_allowed", "%s %s", m, path)
			// HEAD is allowed where GET is only on the probes.
			allow := strings.ReplaceAll(r.Header.Get("Allow"), ", HEAD", "")
			require.Equal(t, strings.Join(documented, ", "), allow, "%s %s", m, path)
			checked++
		}
	}
	require.Greater(t, checked, 100, "wrong methods tried")
}
