package memory

import (
	"context"
	"slices"
	"sync"

	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
)

var _ appmessaging.EventLog = (*DB)(nil)

// EventsAfter reads, in seq order, up to limit events after a position or
// at the given positions (the live feed's event log).
func (db *DB) EventsAfter(ctx context.Context, after int64, also []int64, limit int) ([]appmessaging.LoggedEvent, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]appmessaging.LoggedEvent, 0)
	for _, e := range db.snapshot().eventLog() {
		if e.seq > after || slices.Contains(also, e.seq) {
			out = append(out, appmessaging.LoggedEvent{Seq: e.seq, Event: cloneEvent(e.Event)})
		}
	}
	return window(out, 0, unbounded(limit)), nil
}

// LastEventSeq is the highest seq in the log, 0 when it is empty.
func (db *DB) LastEventSeq(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var last int64
	for _, e := range db.snapshot().events {
		last = max(last, e.seq)
	}
	return last, nil
}

// EventWakeups receives after each commit that appended events or
// enqueued jobs; the function stops the receiving.
func (db *DB) EventWakeups() (<-chan struct{}, func()) { return db.wake.subscribe() }

// wakeHub tells its subscribers that something was committed; a wake-up
// waiting to be received takes the next ones with it.
type wakeHub struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

func (h *wakeHub) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = map[chan struct{}]struct{}{}
	}
	h.subs[ch] = struct{}{}
	return ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.subs, ch)
	}
}

func (h *wakeHub) signal() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
