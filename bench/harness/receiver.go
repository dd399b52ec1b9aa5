package harness

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Receiver is a webhook receiver on 127.0.0.1 in the bench process: it answers 204
// at once, counts the deliveries and, when it tracks them, notes when the first
// delivery of each message arrived, by the message_id of its payload. A server
// reaches it when started with AllowLoopback.
type Receiver struct {
	// URL is where the server posts its deliveries.
	URL string

	srv      *http.Server
	track    bool
	count    atomic.Int64
	mu       sync.Mutex
	arrivals map[string]time.Time
}

// StartReceiver starts a receiver that stops when the scenario ends. Without track
// it only counts, to spend less of the machine here.
func (e *Env) StartReceiver(track bool) (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rc := NewReceiver(track)
	rc.URL = "http://" + ln.Addr().String() + "/hook"
	rc.srv = &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = rc.srv.Serve(ln) }()
	e.AfterScenario(func() { _ = rc.srv.Close() })
	return rc, nil
}

// NewReceiver returns a receiver that is not listening, for tests of what reads it.
func NewReceiver(track bool) *Receiver {
	return &Receiver{track: track, arrivals: map[string]time.Time{}}
}

// ServeHTTP notes one delivery.
func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	body, _ := io.ReadAll(r.Body)
	rc.count.Add(1)
	w.WriteHeader(http.StatusNoContent)
	if !rc.track {
		return
	}
	var p struct {
		MessageID string `json:"message_id"`
	}
	if json.Unmarshal(body, &p) == nil && p.MessageID != "" {
		rc.Note(p.MessageID, at)
	}
}

// Note records that message id's delivery arrived at t, unless one arrived before.
func (rc *Receiver) Note(id string, t time.Time) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if _, seen := rc.arrivals[id]; !seen {
		rc.arrivals[id] = t
	}
}

// Count is the number of deliveries received.
func (rc *Receiver) Count() int64 { return rc.count.Load() }

// Take removes and returns the arrival of message id's first delivery.
func (rc *Receiver) Take(id string) (time.Time, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	at, ok := rc.arrivals[id]
	delete(rc.arrivals, id)
	return at, ok
}
