package httpguard

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"

	appcron "github.com/switchboard-dev/switchboard/application/cron"
	"github.com/switchboard-dev/switchboard/domain/cron"
)

// CronCaller makes cron jobs' calls through the guard: every connection's
// address is checked, no proxy is used and redirects are not followed
// (a 3xx is the answer, and a failed run).
type CronCaller struct {
	client *http.Client
}

var _ appcron.Caller = (*CronCaller)(nil)

// NewCronCaller returns the cron jobs' HTTP client. It keeps more idle
// connections per host than the general client, because many jobs often
// call the same host at the same minute.
func (g *Guard) NewCronCaller() *CronCaller {
	transport := &http.Transport{
		Proxy:               nil,
		DialContext:         g.DialContext,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 256,
		// Bounds the connections to one host, so a host many jobs call
		// at once is not flooded (calls queue for a connection within
		// their own timeouts) and connections are reused, not churned.
		MaxConnsPerHost:        256,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: MaxResponseHeaderBytes,
	}
	return &CronCaller{client: &http.Client{
		Transport:     transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// Call makes one call within req.Timeout (the whole exchange, body
// included) and keeps at most cron.MaxResponseBody bytes of the answer.
func (c *CronCaller) Call(ctx context.Context, req appcron.Request) appcron.Response {
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = cron.DefaultTimeout
	}
	// Timed from before the deadline is set, so a call cut at the timeout
	// reports at least the timeout.
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var body io.Reader
	if req.Body != nil {
		body = bytes.NewReader(req.Body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.Method, req.URL, body)
	if err != nil {
		return appcron.Response{Err: err}
	}
	for k, v := range req.Headers {
		hr.Header.Set(k, v)
	}
	if req.Body != nil && hr.Header.Get("Content-Type") == "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	if hr.Header.Get("User-Agent") == "" {
		hr.Header.Set("User-Agent", "Switchboard-Cron/1")
	}
	hr.Header.Set("Idempotency-Key", req.IdempotencyKey)
	resp, err := c.client.Do(hr)
	if err != nil {
		return appcron.Response{Err: err, Elapsed: time.Since(start)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, cron.MaxResponseBody))
	// Read a little more so the connection can be reused.
	_, _ = io.CopyN(io.Discard, resp.Body, 256<<10)
	out := appcron.Response{StatusCode: resp.StatusCode, Body: b, Elapsed: time.Since(start)}
	if err != nil {
		out.Err = err
	}
	return out
}
