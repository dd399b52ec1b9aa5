package webhooks_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sender "github.com/switchboard-dev/switchboard/adapters/webhooks"
	app "github.com/switchboard-dev/switchboard/application/webhooks"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// countingServer is a receiver on 127.0.0.1 that counts the connections
// opened to it.
func countingServer(t *testing.T, tlsOn bool, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	if tlsOn {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, &conns
}

func post(t *testing.T, s *sender.Sender, url, body string) app.Response {
	t.Helper()
	res, err := s.Post(context.Background(), app.Request{URL: url, Header: map[string]string{"webhook-id": "msg_1", "Content-Type": "application/json"}, Body: []byte(body)})
	require.NoError(t, err)
	return res
}

var plainDial = (&net.Dialer{}).DialContext

func TestSenderKeepsConnections(t *testing.T) {
	t.Parallel()
	var got atomic.Value
	srv, conns := countingServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, r.ContentLength)
		_, _ = r.Body.Read(b)
		got.Store(r.Method + " " + r.URL.RequestURI() + " " + r.Header.Get("Webhook-Id") + " " + string(b))
		w.WriteHeader(http.StatusNoContent)
	})
	s := sender.NewSender(plainDial, nil)
	for range 20 {
		require.Equal(t, http.StatusNoContent, post(t, s, srv.URL+"/hook?x=1", `{"a":1}`).StatusCode)
	}
	require.Equal(t, `POST /hook?x=1 msg_1 {"a":1}`, got.Load())
	require.EqualValues(t, 1, conns.Load(), "one connection for sequential posts")
}

func TestSenderRedialsWhenTheReceiverClosed(t *testing.T) {
	t.Parallel()
	srv, conns := countingServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("close") == "1" {
			w.Header().Set("Connection", "close")
		}
		_, _ = w.Write([]byte("ok"))
	})
	s := sender.NewSender(plainDial, nil)
	require.Equal(t, "ok", string(post(t, s, srv.URL, "{}").Body))
	// The receiver drops its idle connection: the next post finds it dead
	// before any answer and goes out again on a new one.
	srv.CloseClientConnections()
	require.Equal(t, "ok", string(post(t, s, srv.URL, "{}").Body))
	require.EqualValues(t, 2, conns.Load())
	// An answer with Connection: close is read, and the connection not reused.
	require.Equal(t, "ok", string(post(t, s, srv.URL+"?close=1", "{}").Body))
	require.Equal(t, "ok", string(post(t, s, srv.URL, "{}").Body))
	require.EqualValues(t, 3, conns.Load())
}

func TestSenderReadsLongAndChunkedAnswers(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", webhook.MaxResponseBytes+100)
	huge := strings.Repeat("y", 1<<20)
	srv, conns := countingServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "7")
		switch r.URL.Path {
		case "/chunked":
			w.WriteHeader(http.StatusTooManyRequests)
			for i := 0; i < len(long); i += 100 {
				_, _ = w.Write([]byte(long[i : i+min(100, len(long)-i)]))
				w.(http.Flusher).Flush()
			}
		case "/huge":
			_, _ = w.Write([]byte(huge))
		default:
			_, _ = w.Write([]byte("short"))
		}
	})
	s := sender.NewSender(plainDial, nil)
	res := post(t, s, srv.URL+"/chunked", "{}")
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode)
	require.Len(t, res.Body, webhook.MaxResponseBytes, "the logged prefix")
	require.Equal(t, 7, int(res.RetryAfter.Seconds()))
	require.Equal(t, "short", string(post(t, s, srv.URL, "{}").Body), "the chunked answer was read to its end")
	require.EqualValues(t, 1, conns.Load())
	res = post(t, s, srv.URL+"/huge", "{}")
	require.Equal(t, huge[:webhook.MaxResponseBytes], string(res.Body))
	require.Equal(t, "short", string(post(t, s, srv.URL, "{}").Body), "an answer too long to drain closes its connection")
	require.EqualValues(t, 2, conns.Load())
}

func TestSenderSpeaksTLS(t *testing.T) {
	t.Parallel()
	srv, conns := countingServer(t, true, func(w http.ResponseWriter, r *http.Request) {
		require.NotNil(t, r.TLS)
		_, _ = w.Write([]byte(r.Header.Get("Content-Type")))
	})
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	s := sender.NewSender(plainDial, &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12})
	for range 3 {
		require.Equal(t, "application/json", string(post(t, s, srv.URL, "{}").Body))
	}
	require.EqualValues(t, 1, conns.Load())

	untrusting := sender.NewSender(plainDial, nil)
	_, err := untrusting.Post(context.Background(), app.Request{URL: srv.URL, Body: []byte("{}")})
	require.ErrorContains(t, err, "certificate")
}

func TestSenderRefusesOtherSchemes(t *testing.T) {
	t.Parallel()
	s := sender.NewSender(func(context.Context, string, string) (net.Conn, error) {
		t.Fatal("nothing may be dialed")
		return nil, nil
	}, nil)
	for _, u := range []string{"ftp://example.com/x", "file:///etc/passwd", "http:///nohost", "::bad"} {
		_, err := s.Post(context.Background(), app.Request{URL: u, Body: []byte("{}")})
		require.Error(t, err, u)
	}
}

// A receiver that sends 103 Early Hints before its answer: the attempt's
// answer is the final one, 500 and its body, and the next attempt gets its
// own answer, not the one before.
func TestSenderReadsTheFinalAnswerAfterEarlyHints(t *testing.T) {
	t.Parallel()
	rc := newRawReceiver(t, func(n int, w *bufio.Writer) error {
		if n == 1 {
			_, err := w.WriteString("HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n" +
				"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\nboom")
			return err
		}
		_, err := w.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nfine")
		return err
	})
	s := sender.NewSender(plainDial, nil)
	res := post(t, s, rc.url+"/hook", "{}")
	require.Equal(t, http.StatusInternalServerError, res.StatusCode)
	require.Equal(t, "boom", string(res.Body))
	res = post(t, s, rc.url+"/hook", "{}")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "fine", string(res.Body))
	require.EqualValues(t, 2, rc.count.Load())
}

// 64 MiB of response header: a failed attempt, after reading no more than
// the 64 KiB cap, and the receiver's next answer is read on a new
// connection.
func TestOverlongResponseHeaderIsAFailedAttempt(t *testing.T) {
	// Not parallel: what the attempt allocates is read from the whole
	// process's statistics.
	const total = 64 << 20
	line := []byte("X-Filler: " + strings.Repeat("h", 1<<10-12) + "\r\n")
	var written atomic.Int64
	done := make(chan struct{})
	rc := newRawReceiver(t, func(n int, w *bufio.Writer) error {
		if n > 1 {
			_, err := w.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			return err
		}
		defer close(done)
		if _, err := w.WriteString("HTTP/1.1 200 OK\r\n"); err != nil {
			return err
		}
		for written.Load() < total {
			m, err := w.Write(line)
			written.Add(int64(m))
			if err != nil {
				return err
			}
		}
		_, err := w.WriteString("\r\n")
		return err
	})
	s := sender.NewSender(plainDial, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := s.Post(ctx, app.Request{URL: rc.url + "/hook", Body: []byte("{}")})
	runtime.ReadMemStats(&after)
	require.EqualError(t, err, "response header larger than 65536 bytes")
	require.NoError(t, ctx.Err(), "the attempt ended at the cap, not at its timeout")
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(8<<20), "allocated while reading 64 MiB of header")
	<-done
	require.Less(t, written.Load(), int64(total), "the receiver could not send it all: the connection was closed")

	require.Equal(t, "ok", string(post(t, s, rc.url+"/hook", "{}").Body))
}

// 101 Switching Protocols, which hands the connection over, is the
// attempt's answer: the attempt ends at once, not when the receiver lets
// go of the connection.
func TestSenderDoesNotWaitOnASwitchedConnection(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	rc := newRawReceiver(t, func(_ int, w *bufio.Writer) error {
		_, _ = w.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nhello")
		_ = w.Flush()
		<-release
		return io.EOF
	})
	t.Cleanup(func() { close(release) }) // before the receiver's, which waits for its handlers
	s := sender.NewSender(plainDial, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := s.Post(ctx, app.Request{URL: rc.url + "/hook", Body: []byte("{}")})
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, res.StatusCode)
	require.NoError(t, ctx.Err(), "answered at once, not at the timeout")
}
