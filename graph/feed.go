package graph

import (
	"context"
	"strconv"
	"sync"
	"time"

	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// SubscriptionLimits bound the live subscriptions of this process.
type SubscriptionLimits struct {
	// PerAccount is how many subscriptions one account may hold open on
	// this process, over all its sockets; DefaultSubscriptionsPerAccount
	// when 0.
	PerAccount int
	// PerSocket is how many subscriptions one WebSocket may hold open;
	// DefaultSubscriptionsPerSocket when 0.
	PerSocket int
}

// Default subscription limits: a console page holds two or three, an
// agent one per thread it follows.
const (
	DefaultSubscriptionsPerAccount = 100
	DefaultSubscriptionsPerSocket  = 20
)

// subscriptionBuffer is how many messages a subscription may fall behind
// its account's feed before it is ended (its client sees "complete" and
// may subscribe again).
const subscriptionBuffer = 16

// liveHub fans the live feed out to GraphQL subscriptions. It holds one
// feed subscription per account that has GraphQL subscriptions open in
// this process, however many it has, read by one goroutine that filters
// and hands each message on: a subscription costs a small channel and its
// place in a map, not a feed subscription of its own. It ends an
// account's feed subscription with the account's last GraphQL one.
type liveHub struct {
	live   LiveFeed
	limits SubscriptionLimits

	mu       sync.Mutex
	accounts map[string]*accountLive
}

// accountLive is one account's feed subscription and who listens to it.
type accountLive struct {
	subs map[*liveSubscription]struct{}
	// stop ends the feed subscription; nil while it is being opened.
	stop func()
	// ready is closed once the feed subscription is open (or failed to
	// open, with err set).
	ready chan struct{}
	err   error
}

// liveSubscription is one GraphQL subscription: the messages of events of
// type typ, of one thread when threadID is set.
type liveSubscription struct {
	typ      event.Type
	threadID string
	out      chan *messaging.Message
	socket   *socketSubscriptions
	// release stops waiting for the subscription's context to end; set
	// under the hub's mutex.
	release func() bool
	closed  bool
}

// socketSubscriptions counts the subscriptions of one WebSocket; the hub's
// mutex guards it.
type socketSubscriptions struct{ open int }

type socketKey struct{}

// withSocket marks ctx as a WebSocket's, so that its subscriptions are
// counted against the per-socket limit.
func withSocket(ctx context.Context) context.Context {
	return context.WithValue(ctx, socketKey{}, &socketSubscriptions{})
}

func socketOf(ctx context.Context) *socketSubscriptions {
	s, _ := ctx.Value(socketKey{}).(*socketSubscriptions)
	return s
}

func newLiveHub(live LiveFeed, limits SubscriptionLimits) *liveHub {
	if limits.PerAccount <= 0 {
		limits.PerAccount = DefaultSubscriptionsPerAccount
	}
	if limits.PerSocket <= 0 {
		limits.PerSocket = DefaultSubscriptionsPerSocket
	}
	return &liveHub{live: live, limits: limits, accounts: map[string]*accountLive{}}
}

// errTooManySubscriptions refuses a subscription beyond a limit.
func errTooManySubscriptions(limit int, scope string) error {
	return &failure.Error{Kind: failure.KindRateLimited, Code: "too_many_subscriptions", RetryAfter: time.Second,
		Message: strconv.Itoa(limit) + " subscriptions are open " + scope + "; complete one before starting another"}
}

// subscribe returns the messages of accountID's events of type typ (of
// threadID when set) from now until ctx ends; the channel is closed then,
// or earlier when the subscriber falls behind or the feed ends. It refuses
// a subscription beyond the limits with too_many_subscriptions.
func (h *liveHub) subscribe(ctx context.Context, accountID string, typ event.Type, threadID string) (<-chan *messaging.Message, error) {
	s := &liveSubscription{typ: typ, threadID: threadID, out: make(chan *messaging.Message, subscriptionBuffer), socket: socketOf(ctx)}
	h.mu.Lock()
	if s.socket != nil && s.socket.open >= h.limits.PerSocket {
		h.mu.Unlock()
		return nil, errTooManySubscriptions(h.limits.PerSocket, "on this WebSocket")
	}
	a := h.accounts[accountID]
	if a != nil && len(a.subs) >= h.limits.PerAccount {
		h.mu.Unlock()
		return nil, errTooManySubscriptions(h.limits.PerAccount, "for this account on this server")
	}
	opener := a == nil
	if opener {
		a = &accountLive{subs: map[*liveSubscription]struct{}{}, ready: make(chan struct{})}
		h.accounts[accountID] = a
	}
	// Counted at once, so that concurrent subscribes cannot pass a limit
	// together; undone below if the feed cannot be opened.
	a.subs[s] = struct{}{}
	if s.socket != nil {
		s.socket.open++
	}
	h.mu.Unlock()

	if opener {
		a.err = h.open(ctx, accountID, a)
		close(a.ready)
	} else {
		select {
		case <-a.ready:
		case <-ctx.Done():
			h.end(accountID, a, s)
			return nil, ctx.Err()
		}
	}
	if a.err != nil {
		h.end(accountID, a, s)
		return nil, a.err
	}
	release := context.AfterFunc(ctx, func() { h.end(accountID, a, s) })
	h.mu.Lock()
	if s.closed {
		release()
	} else {
		s.release = release
	}
	h.mu.Unlock()
	return s.out, nil
}

// open opens a's feed subscription and starts handing its messages out.
func (h *liveHub) open(ctx context.Context, accountID string, a *accountLive) error {
	// The feed subscription outlives the context of the subscription that
	// opened it, which may end first.
	updates, stop, err := h.live.Subscribe(context.WithoutCancel(ctx), accountID)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		if h.accounts[accountID] == a {
			delete(h.accounts, accountID)
		}
		return err
	}
	a.stop = stop
	if len(a.subs) == 0 {
		// Every subscription ended while the feed was opening.
		stop()
		if h.accounts[accountID] == a {
			delete(h.accounts, accountID)
		}
		return nil
	}
	go h.fanOut(accountID, a, updates)
	return nil
}

// fanOut hands each update of a's feed to the subscriptions it matches,
// without waiting for any: a subscription whose buffer is full is ended.
// When the feed ends (the process stops, or the account's feed fell
// behind), every subscription of a ends with it.
func (h *liveHub) fanOut(accountID string, a *accountLive, updates <-chan appmessaging.LiveUpdate) {
	for u := range updates {
		m := u.Message
		h.mu.Lock()
		for s := range a.subs {
			if s.typ != u.Type || (s.threadID != "" && s.threadID != m.ThreadID) {
				continue
			}
			select {
			case s.out <- &m:
			default:
				h.closeLocked(accountID, a, s)
			}
		}
		h.mu.Unlock()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range a.subs {
		h.closeLocked(accountID, a, s)
	}
}

// end ends subscription s of a.
func (h *liveHub) end(accountID string, a *accountLive, s *liveSubscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closeLocked(accountID, a, s)
}

// closeLocked ends s, and a's feed subscription when s was its last;
// h.mu is held.
func (h *liveHub) closeLocked(accountID string, a *accountLive, s *liveSubscription) {
	if s.closed {
		return
	}
	s.closed = true
	if s.release != nil {
		s.release()
	}
	delete(a.subs, s)
	close(s.out)
	if s.socket != nil {
		s.socket.open--
	}
	if len(a.subs) == 0 && a.stop != nil {
		a.stop()
		a.stop = nil
		if h.accounts[accountID] == a {
			delete(h.accounts, accountID)
		}
	}
}

// count returns how many subscriptions accountID holds open and how many
// feed subscriptions the hub holds (for tests).
func (h *liveHub) count(accountID string) (subscriptions, feeds int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if a := h.accounts[accountID]; a != nil {
		subscriptions = len(a.subs)
	}
	return subscriptions, len(h.accounts)
}
