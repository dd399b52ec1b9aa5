package messaging

import (
	"context"
	"encoding/json"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/application/outage"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// LoggedEvent is an event with its position in the log.
type LoggedEvent struct {
	Seq   int64
	Event event.Event
}

// EventLog reads the account event log, the table the use cases append to
// in the transactions that cause the events. It is shared by every replica:
// a replica learns of other replicas' events by reading it.
type EventLog interface {
	// EventsAfter returns, in seq order, up to limit events whose seq is
	// greater than after or among also (positions that were missing in an
	// earlier read: a transaction that took its seq earlier may commit
	// later).
	EventsAfter(ctx context.Context, after int64, also []int64, limit int) ([]LoggedEvent, error)
	// LastEventSeq is the highest seq in the log, 0 when it is empty.
	LastEventSeq(ctx context.Context) (int64, error)
	// EventWakeups receives soon after a commit that may have added events,
	// in this process or, where the database can tell, in another; the
	// function stops the receiving. Wake-ups may be spurious or coalesced.
	EventWakeups() (<-chan struct{}, func())
}

// LiveMessages reads the messages events are about.
type LiveMessages interface {
	MessagesByID(ctx context.Context, accountID string, ids []string) ([]messaging.Message, error)
}

// LiveUpdate is an event as a live subscriber sees it: the event's type
// and, for a message event, the message as it is once the event is read;
// for an email.received event, the event's payload.
type LiveUpdate struct {
	Type    event.Type
	Message messaging.Message
	Payload []byte
	// Seq is the event's position in the log. An update whose Seq is
	// greater than a Head was committed after that Head was read.
	Seq int64
	// Late is true when the event committed after an event with a greater
	// Seq had been read (its transaction took its place earlier): it may
	// have committed after a Head greater than its Seq was read.
	Late bool
}

// LiveOptions tune the live feed.
type LiveOptions struct {
	// Poll is how often the log is read without a wake-up (a safety net
	// for lost notifications and for other processes on SQLite); 1 s when
	// zero.
	Poll time.Duration
	// GapWait is how long a missing seq is looked for again before it is
	// taken for a rolled-back transaction; 30 s when zero.
	GapWait time.Duration
	// Buffer is how many updates a subscriber may fall behind before its
	// subscription is ended; 256 when zero.
	Buffer int
	Logger *slog.Logger
	Now    func() time.Time
}

// Live follows the event log and hands message events, and the
// email.received events of received email, to the subscribers of their
// account. One reader per process serves every subscriber, so the
// database sees one query per wake-up however many subscriptions are open.
type Live struct {
	log  EventLog
	msgs LiveMessages
	opts LiveOptions

	mu   sync.Mutex
	subs map[*liveSub]struct{}
	// kick wakes the reader when the first subscriber arrives.
	kick chan struct{}
	// synced is false while nobody listens; the reader then skips the log
	// and starts again from its end.
	synced bool
	cursor int64
	gaps   map[int64]time.Time
	// outage keeps a database outage to one log line; subscriptions stay
	// open and catch up from the log when it returns.
	outage *outage.Tracker
}

type liveSub struct {
	accountID string
	ch        chan LiveUpdate
	closed    bool
}

// readBatch bounds one read of the log.
const readBatch = 500

// maxGaps bounds the missing seqs the reader remembers.
const maxGaps = 10000

// NewLive builds the live feed; Run reads the log.
func NewLive(log EventLog, msgs LiveMessages, opts LiveOptions) *Live {
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.GapWait <= 0 {
		opts.GapWait = 30 * time.Second
	}
	if opts.Buffer <= 0 {
		opts.Buffer = 256
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Live{log: log, msgs: msgs, opts: opts, subs: map[*liveSub]struct{}{}, kick: make(chan struct{}, 1), gaps: map[int64]time.Time{},
		outage: outage.NewTracker(opts.Logger, "read the event log for live subscribers", opts.Poll, 0)}
}

// Subscribe returns the message events of accountID committed from now on,
// and a function that ends the subscription. The channel is closed when the
// subscription ends, also when the subscriber falls too far behind.
func (l *Live) Subscribe(ctx context.Context, accountID string) (<-chan LiveUpdate, func(), error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.synced {
		last, err := l.log.LastEventSeq(ctx)
		if err != nil {
			return nil, nil, err
		}
		l.cursor, l.gaps, l.synced = last, map[int64]time.Time{}, true
	}
	s := &liveSub{accountID: accountID, ch: make(chan LiveUpdate, l.opts.Buffer)}
	l.subs[s] = struct{}{}
	select {
	case l.kick <- struct{}{}:
	default:
	}
	return s.ch, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.drop(s)
	}, nil
}

// Head is the log's position now: the updates committed from now on have
// a greater Seq, or are Late.
func (l *Live) Head(ctx context.Context) (int64, error) {
	return l.log.LastEventSeq(ctx)
}

// drop ends a subscription; l.mu is held.
func (l *Live) drop(s *liveSub) {
	if _, ok := l.subs[s]; !ok {
		return
	}
	delete(l.subs, s)
	if !s.closed {
		s.closed = true
		close(s.ch)
	}
}

// Run reads the log on every wake-up and poll until ctx ends, then ends
// every subscription.
func (l *Live) Run(ctx context.Context) {
	wake, stop := l.log.EventWakeups()
	defer stop()
	tick := time.NewTicker(l.opts.Poll)
	defer tick.Stop()
	defer func() {
		l.mu.Lock()
		for s := range l.subs {
			l.drop(s)
		}
		l.mu.Unlock()
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-tick.C:
		case <-l.kick:
		}
		switch err := l.read(ctx); {
		case ctx.Err() != nil:
		case err != nil:
			l.outage.Failed(err)
		default:
			l.outage.Succeeded()
		}
	}
}

// read hands every event committed since the last read to its account's
// subscribers.
func (l *Live) read(ctx context.Context) error {
	for {
		l.mu.Lock()
		if len(l.subs) == 0 {
			l.synced = false
			l.mu.Unlock()
			return nil
		}
		cursor := l.cursor
		also := make([]int64, 0, len(l.gaps))
		for seq := range l.gaps {
			also = append(also, seq)
		}
		l.mu.Unlock()
		sort.Slice(also, func(i, j int) bool { return also[i] < also[j] })

		evs, err := l.log.EventsAfter(ctx, cursor, also, readBatch)
		if err != nil {
			return err
		}
		l.mu.Lock()
		now := l.opts.Now()
		fresh := evs[:0:0]
		late := map[int64]bool{}
		for _, e := range evs {
			if _, wasGap := l.gaps[e.Seq]; wasGap {
				delete(l.gaps, e.Seq)
				late[e.Seq] = true
			} else if e.Seq <= l.cursor {
				continue // read twice
			}
			for missing := l.cursor + 1; missing < e.Seq && len(l.gaps) < maxGaps; missing++ {
				l.gaps[missing] = now
			}
			l.cursor = max(l.cursor, e.Seq)
			fresh = append(fresh, e)
		}
		for seq, since := range l.gaps {
			if now.Sub(since) > l.opts.GapWait {
				delete(l.gaps, seq)
			}
		}
		l.mu.Unlock()
		if err := l.dispatch(ctx, fresh, late); err != nil {
			return err
		}
		if len(evs) < readBatch {
			return nil
		}
	}
}

// messagePayload is the part of a message event's payload the feed reads.
type messagePayload struct {
	MessageID string `json:"message_id"`
}

// dispatch loads the messages of evs, one read per account with
// subscribers, and hands them out in log order; late holds the seqs of
// the events that committed after a later one was read.
func (l *Live) dispatch(ctx context.Context, evs []LoggedEvent, late map[int64]bool) error {
	type pending struct {
		seq       int64
		typ       event.Type
		accountID string
		messageID string
		// payload is an email.received event's.
		payload []byte
	}
	var todo []pending
	ids := map[string][]string{}
	l.mu.Lock()
	listening := map[string]bool{}
	for s := range l.subs {
		listening[s.accountID] = true
	}
	l.mu.Unlock()
	for _, e := range evs {
		if !listening[e.Event.AccountID] {
			continue
		}
		if e.Event.Type == event.EmailReceived {
			todo = append(todo, pending{seq: e.Seq, typ: e.Event.Type, accountID: e.Event.AccountID, payload: e.Event.Payload})
			continue
		}
		if e.Event.Type != event.MessageReceived && e.Event.Type != event.MessageStatus {
			continue
		}
		var p messagePayload
		if err := json.Unmarshal(e.Event.Payload, &p); err != nil || p.MessageID == "" {
			continue
		}
		todo = append(todo, pending{seq: e.Seq, typ: e.Event.Type, accountID: e.Event.AccountID, messageID: p.MessageID})
		ids[e.Event.AccountID] = append(ids[e.Event.AccountID], p.MessageID)
	}
	if len(todo) == 0 {
		return nil
	}
	found := map[string]messaging.Message{}
	for accountID, list := range ids {
		for start := 0; start < len(list); start += MaxBatch {
			ms, err := l.msgs.MessagesByID(ctx, accountID, list[start:min(start+MaxBatch, len(list))])
			if err != nil {
				return err
			}
			for _, m := range ms {
				found[m.ID] = m
			}
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range todo {
		u := LiveUpdate{Type: p.typ, Payload: p.payload, Seq: p.seq, Late: late[p.seq]}
		if p.payload == nil {
			m, ok := found[p.messageID]
			if !ok || m.AccountID != p.accountID {
				continue
			}
			u.Message = m
		}
		for s := range l.subs {
			if s.accountID != p.accountID {
				continue
			}
			select {
			case s.ch <- u:
			default:
				l.opts.Logger.WarnContext(ctx, "live subscriber fell behind; ending its subscription", "account_id", s.accountID)
				l.drop(s)
			}
		}
	}
	return nil
}
