// Package webhooks posts signed webhook deliveries to customer endpoints
// over HTTP/1.1 connections dialed through the function the composition
// root gives it: the SSRF guard of adapters/httpguard, which checks every
// dial (DNS rebinding included). Redirects are not followed.
package webhooks

import (
	"context"
	"crypto/tls"
	"net/http"
	"strconv"
	"strings"
	"time"

	app "github.com/switchboard-dev/switchboard/application/webhooks"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

var _ app.Sender = (*Sender)(nil)

// Sender posts deliveries over connections it keeps per receiver
// (conns.go).
type Sender struct {
	conns connPool
	now   func() time.Time
}

// NewSender builds a Sender that dials through dial, which must refuse
// forbidden addresses at connect time; tlsConfig (nil: the system's
// roots) verifies https receivers. Redirects are never followed: a 3xx is
// the answer.
func NewSender(dial Dial, tlsConfig *tls.Config) *Sender {
	if tlsConfig == nil {
		tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	return &Sender{conns: connPool{dial: dial, tls: tlsConfig}, now: time.Now}
}

// maxDrain is how much of a long answer is read past the logged prefix so
// the connection can be reused; longer answers close it.
const maxDrain = 64 << 10

// Post sends one attempt. An answer of any status is a Response; only a
// request that got no answer (refused address, network error, ctx ended)
// is an error.
func (s *Sender) Post(ctx context.Context, r app.Request) (app.Response, error) {
	t, err := parseTarget(r.URL)
	if err != nil {
		return app.Response{}, err
	}
	a, err := s.conns.post(ctx, t, r.Header, r.Body, webhook.MaxResponseBytes, maxDrain)
	if err != nil {
		return app.Response{}, err
	}
	return app.Response{StatusCode: a.status, Body: a.body, RetryAfter: retryAfter(a.header.Get("Retry-After"), s.now())}, nil
}

// CloseIdleConnections closes the kept-alive connections.
func (s *Sender) CloseIdleConnections() { s.conns.closeIdle() }

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
