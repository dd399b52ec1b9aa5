// Package webhooks posts signed webhook deliveries to customer endpoints
// through an HTTP client the composition root gives it: the SSRF-safe
// client of adapters/httpguard, which checks every dial (DNS rebinding
// included) and does not follow redirects.
package webhooks

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	app "github.com/switchboard-dev/switchboard/application/webhooks"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

var _ app.Sender = (*Sender)(nil)

// Sender posts deliveries.
type Sender struct {
	client *http.Client
	now    func() time.Time
}

// NewSender builds a Sender on client, which must refuse forbidden
// addresses at connect time and return 3xx responses instead of
// following them.
func NewSender(client *http.Client) *Sender {
	return &Sender{client: client, now: time.Now}
}

// maxDrain is how much of a long answer is read past the logged prefix so
// the connection can be reused; longer answers close it.
const maxDrain = 64 << 10

// Post sends one attempt. An answer of any status is a Response; only a
// request that got no answer (refused address, network error, ctx ended)
// is an error.
func (s *Sender) Post(ctx context.Context, r app.Request) (app.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return app.Response{}, err
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	res, err := s.client.Do(req)
	if err != nil {
		return app.Response{}, err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, webhook.MaxResponseBytes))
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxDrain))
	return app.Response{StatusCode: res.StatusCode, Body: body, RetryAfter: retryAfter(res.Header.Get("Retry-After"), s.now())}, nil
}

// CloseIdleConnections closes the client's kept-alive connections.
func (s *Sender) CloseIdleConnections() { s.client.CloseIdleConnections() }

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
