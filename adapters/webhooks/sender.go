// Package webhooks posts signed webhook deliveries to customer endpoints
// with net/http, over connections dialed through the function the
// composition root gives it: the SSRF guard of adapters/httpguard, which
// checks every dial (DNS rebinding included). Redirects are not followed.
package webhooks

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	app "github.com/switchboard-dev/switchboard/application/webhooks"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

var _ app.Sender = (*Sender)(nil)

// Dial opens a connection; the composition root passes the SSRF guard's.
type Dial func(ctx context.Context, network, address string) (net.Conn, error)

const (
	// maxIdlePerReceiver bounds the connections kept open to one
	// receiver: as many as deliveries in flight to it, up to the runner's
	// default workers on 32 CPUs.
	maxIdlePerReceiver = 512
	// idleTimeout closes a connection unused for this long (receivers
	// commonly close theirs after a minute or more).
	idleTimeout = 50 * time.Second
	// maxResponseHeaderBytes bounds an answer's header; a longer one fails
	// the attempt.
	maxResponseHeaderBytes = 64 << 10
	// maxDrain is how much of a long answer is read past the logged prefix
	// so the connection can be reused; longer answers close it.
	maxDrain = 64 << 10
)

// errHeaderTooLarge fails an attempt whose answer's header is too long.
var errHeaderTooLarge = fmt.Errorf("response header larger than %d bytes", maxResponseHeaderBytes)

// Sender posts deliveries through an http.Transport whose connections
// are dialed by the SSRF guard and kept per receiver. It calls the
// transport's RoundTrip, which never follows a redirect (http.Client's
// redirect handling, cookies and timeouts are all unused here).
type Sender struct {
	transport *http.Transport
	now       func() time.Time
}

// NewSender builds a Sender that dials through dial, which must refuse
// forbidden addresses at connect time; tlsConfig (nil: the system's
// roots) verifies https receivers. Redirects are never followed: a 3xx is
// the answer. The attempt's timeout is its context's.
func NewSender(dial Dial, tlsConfig *tls.Config) *Sender {
	if tlsConfig == nil {
		tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	// HTTP/1.1 only, as receivers are written for: one request per
	// connection at a time, so a slow receiver holds up only its own
	// deliveries.
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	transport := &http.Transport{
		Proxy:                  nil,
		DialContext:            dial,
		TLSClientConfig:        tlsConfig,
		TLSHandshakeTimeout:    10 * time.Second,
		Protocols:              &protocols,
		MaxIdleConnsPerHost:    maxIdlePerReceiver,
		IdleConnTimeout:        idleTimeout,
		MaxResponseHeaderBytes: maxResponseHeaderBytes,
		// The request goes out as the signer wrote it, and the logged
		// answer is the bytes the receiver sent.
		DisableCompression: true,
	}
	return &Sender{transport: transport, now: time.Now}
}

// Post sends one attempt. An answer of any status is a Response; only a
// request that got no answer (refused address, network error, ctx ended)
// is an error.
func (s *Sender) Post(ctx context.Context, r app.Request) (app.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return app.Response{}, err
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return app.Response{}, fmt.Errorf("unsupported URL scheme %q", req.URL.Scheme)
	}
	req.Header = make(http.Header, len(r.Header)+1)
	for k, v := range r.Header {
		req.Header[textproto.CanonicalMIMEHeaderKey(k)] = []string{v}
	}
	// Present and empty, the key is not sent but lets the transport send
	// the request again on a new connection when a kept one turns out to
	// be closed by the receiver before any answer (a receiver may then see
	// a delivery twice, which its webhook-id lets it notice; deliveries
	// are at least once anyway).
	req.Header["Idempotency-Key"] = nil
	res, err := s.transport.RoundTrip(req)
	if err != nil {
		return app.Response{}, sendError(err)
	}
	defer res.Body.Close()
	if res.StatusCode < 200 {
		// 101 Switching Protocols hands the connection over, its reads no
		// longer bounded by ctx: nothing is read from it, and closing the
		// body closes it.
		return app.Response{StatusCode: res.StatusCode}, nil
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, webhook.MaxResponseBytes))
	if err != nil {
		return app.Response{}, err
	}
	// Reading a little more lets a short answer end, and its connection
	// go back to be reused; closing the body of a longer one closes it.
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxDrain))
	return app.Response{StatusCode: res.StatusCode, Body: body, RetryAfter: retryAfter(res.Header.Get("Retry-After"), s.now())}, nil
}

// sendError is what the attempt log says of a request that got no answer.
func sendError(err error) error {
	// net/http words an over-long header in its own error, not a
	// sentinel (TestOverlongResponseHeaderIsAFailedAttempt pins it).
	if strings.Contains(err.Error(), "server response headers exceeded") {
		return errHeaderTooLarge
	}
	return err
}

// CloseIdleConnections closes the kept-alive connections.
func (s *Sender) CloseIdleConnections() { s.transport.CloseIdleConnections() }

// maxRetryAfter caps what a receiver may ask for: the longest step of the
// schedule.
const maxRetryAfter = 10 * time.Hour

// retryAfter reads Retry-After as seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), maxRetryAfter)
}
