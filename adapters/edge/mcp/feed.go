package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	appemail "github.com/switchboard-dev/switchboard/application/email"
	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// feed hands the messages and emails accounts receive to the calls
// waiting for one (wait_for_message), and the messages to the sessions'
// event streams open here (for their resource subscriptions). It holds
// one live subscription per account that has a wait or a subscription,
// however many it has, and ends it when the last one goes: memory grows
// with the accounts listening, not with the calls. Waits are bounded in
// number (maxWaits, maxPerAccount), so that a flood of them is refused
// rather than held.
type feed struct {
	live           LiveFeed
	maxWaits       int
	maxPerAccount  int
	threadReceived func(accountID, threadID string)
	log            *slog.Logger

	// ctx ends with the feed; resubscriptions run in it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	accounts map[string]*accountFeed
	waits    int
	closed   bool
}

// accountFeed is one account's live subscription and who listens to it.
type accountFeed struct {
	accountID string
	waiters   map[*waiter]struct{}
	// watches counts the event streams that hear of the account's
	// messages (to send their sessions' resource updates).
	watches int
	stop    func()
}

// waiter is a call waiting for what its filter matches among what its
// account receives after the log position after (the account's
// subscription may have been taken earlier, and hand out older updates
// still).
type waiter struct {
	filter waitFilter
	after  int64
	got    chan arrival
}

// waitFilter says what a wait waits for: messages, received emails or
// both; of one thread only when threadID is set (a message thread, thr_…,
// or an email thread, eth_…), and emails to one mailbox only when
// mailbox is set (lower-case).
type waitFilter struct {
	messages, emails bool
	threadID         string
	mailbox          string
}

// arrival is what a wait returns: a message a user sent, or an email
// received (as its email.received event tells it).
type arrival struct {
	message *messaging.Message
	email   *appemail.ReceivedPayload
	// seq and late are the update's (appmessaging.LiveUpdate).
	seq  int64
	late bool
}

// newSince reports whether a was committed after the log position after.
func (a arrival) newSince(after int64) bool {
	return a.seq > after || a.late
}

// matches reports whether the filter waits for a.
func (f waitFilter) matches(a arrival) bool {
	switch {
	case a.message != nil:
		return f.messages && (f.threadID == "" || f.threadID == a.message.ThreadID)
	case a.email != nil:
		return f.emails && (f.threadID == "" || f.threadID == a.email.ThreadID) &&
			(f.mailbox == "" || strings.EqualFold(f.mailbox, a.email.RecipientAddress))
	}
	return false
}

func newFeed(live LiveFeed, maxWaits, maxPerAccount int, threadReceived func(accountID, threadID string), log *slog.Logger) *feed {
	ctx, cancel := context.WithCancel(context.Background())
	return &feed{live: live, maxWaits: maxWaits, maxPerAccount: maxPerAccount, threadReceived: threadReceived, log: log,
		ctx: ctx, cancel: cancel, accounts: map[string]*accountFeed{}}
}

// errTooManyWaits refuses a wait beyond the bounds.
func errTooManyWaits(limit int, scope string) error {
	return &failure.Error{Kind: failure.KindRateLimited, Code: "too_many_waits", RetryAfter: time.Second,
		Message: strconv.Itoa(limit) + " wait_for_message calls are waiting " + scope + "; retry when one ends"}
}

// wait returns the next arrival of accountID that filter matches within
// timeout, of those committed after the call began; false when none came. It ends early with ctx's error, or when
// the feed closes.
func (f *feed) wait(ctx context.Context, accountID string, filter waitFilter, timeout time.Duration) (arrival, bool, error) {
	head, err := f.live.Head(ctx)
	if err != nil {
		return arrival{}, false, err
	}
	w := &waiter{filter: filter, after: head, got: make(chan arrival, 1)}
	if err := f.listen(ctx, accountID, func(a *accountFeed) error {
		if f.waits >= f.maxWaits {
			return errTooManyWaits(f.maxWaits, "on this server")
		}
		if len(a.waiters) >= f.maxPerAccount {
			return errTooManyWaits(f.maxPerAccount, "for this account")
		}
		a.waiters[w] = struct{}{}
		f.waits++
		return nil
	}); err != nil {
		return arrival{}, false, err
	}
	defer f.leave(accountID, func(a *accountFeed) {
		if _, ok := a.waiters[w]; ok {
			delete(a.waiters, w)
			f.waits--
		}
	})
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case a := <-w.got:
		return a, true, nil
	case <-timer.C:
		return arrival{}, false, nil
	case <-ctx.Done():
		return arrival{}, false, ctx.Err()
	case <-f.ctx.Done():
		return arrival{}, false, failure.Unavailable(errClosed.Error(), errClosed)
	}
}

// watch tells threadReceived of every message accountID receives until
// the returned function is called.
func (f *feed) watch(ctx context.Context, accountID string) (func(), error) {
	if err := f.listen(ctx, accountID, func(a *accountFeed) error {
		a.watches++
		return nil
	}); err != nil {
		return nil, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			f.leave(accountID, func(a *accountFeed) { a.watches-- })
		})
	}, nil
}

// listen joins accountID's listeners with join (under the lock),
// subscribing to the account's live feed first if nobody listens yet.
func (f *feed) listen(ctx context.Context, accountID string, join func(*accountFeed) error) error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return failure.Unavailable(errClosed.Error(), errClosed)
	}
	if a := f.accounts[accountID]; a != nil {
		defer f.mu.Unlock()
		return join(a)
	}
	f.mu.Unlock()

	// The subscription may read the database (when nobody in the process
	// listened before): not under the lock.
	updates, stop, err := f.live.Subscribe(ctx, accountID)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		stop()
		return failure.Unavailable(errClosed.Error(), errClosed)
	}
	if a := f.accounts[accountID]; a != nil {
		stop() // another call subscribed meanwhile
		return join(a)
	}
	a := &accountFeed{accountID: accountID, waiters: map[*waiter]struct{}{}, stop: stop}
	if err := join(a); err != nil {
		stop()
		return err
	}
	f.accounts[accountID] = a
	f.wg.Add(1)
	go f.run(a, updates)
	return nil
}

// leave removes a listener with drop (under the lock), and ends the
// account's subscription when nobody listens any more.
func (f *feed) leave(accountID string, drop func(*accountFeed)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := f.accounts[accountID]
	if a == nil {
		return
	}
	drop(a)
	if len(a.waiters) == 0 && a.watches == 0 {
		delete(f.accounts, accountID)
		a.stop()
	}
}

// current reports whether a is still the account's subscription.
func (f *feed) current(a *accountFeed) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.accounts[a.accountID] == a
}

// run hands out an account's received messages until its subscription
// ends. A subscription the live feed ended (this reader fell behind) is
// taken again; the waits meanwhile keep waiting.
func (f *feed) run(a *accountFeed, updates <-chan appmessaging.LiveUpdate) {
	defer f.wg.Done()
	for {
		u, ok := <-updates
		if !ok {
			if updates = f.resubscribe(a); updates == nil {
				return
			}
			continue
		}
		got := arrival{seq: u.Seq, late: u.Late}
		switch u.Type {
		case event.MessageReceived:
			got.message = &u.Message
		case event.EmailReceived:
			var p appemail.ReceivedPayload
			if err := json.Unmarshal(u.Payload, &p); err != nil {
				continue
			}
			got.email = &p
		default:
			continue
		}
		f.mu.Lock()
		for w := range a.waiters {
			if !w.filter.matches(got) || !got.newSince(w.after) {
				continue
			}
			w.got <- got // room for one, and a waiter gets one
			delete(a.waiters, w)
			f.waits--
		}
		watched := got.message != nil && a.watches > 0
		f.mu.Unlock()
		if watched {
			f.threadReceived(a.accountID, got.message.ThreadID)
		}
	}
}

// resubscribe takes an account's subscription again after the live feed
// ended it; nil when the account's listeners are gone or the feed closed.
func (f *feed) resubscribe(a *accountFeed) <-chan appmessaging.LiveUpdate {
	for attempt := 0; ; attempt++ {
		if !f.current(a) || f.ctx.Err() != nil {
			return nil
		}
		updates, stop, err := f.live.Subscribe(f.ctx, a.accountID)
		if err == nil {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.accounts[a.accountID] != a {
				stop()
				return nil
			}
			a.stop = stop
			return updates
		}
		if attempt == 0 {
			f.log.Warn("mcp: resubscribe to the live feed", "account_id", a.accountID, "error", err.Error())
		}
		select {
		case <-f.ctx.Done():
			return nil
		case <-time.After(min(time.Duration(attempt+1)*100*time.Millisecond, 2*time.Second)):
		}
	}
}

// close ends every subscription and wait.
func (f *feed) close() {
	f.mu.Lock()
	f.closed = true
	for id, a := range f.accounts {
		delete(f.accounts, id)
		a.stop()
	}
	f.mu.Unlock()
	f.cancel()
	f.wg.Wait()
}

// listening is how many accounts and waits the feed holds, for tests.
func (f *feed) listening() (accounts, waits int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.accounts), f.waits
}
