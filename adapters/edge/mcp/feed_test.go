package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	appemail "github.com/switchboard-dev/switchboard/application/email"
	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// fakeLive is a live feed a test publishes to by hand.
type fakeLive struct {
	mu   sync.Mutex
	subs map[string][]chan appmessaging.LiveUpdate
	// subscribed counts the subscriptions ever taken.
	subscribed int
	// seq is the position of the last update published.
	seq int64
}

func (l *fakeLive) Head(context.Context) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq, nil
}

func newFakeLive() *fakeLive { return &fakeLive{subs: map[string][]chan appmessaging.LiveUpdate{}} }

func (l *fakeLive) Subscribe(_ context.Context, accountID string) (<-chan appmessaging.LiveUpdate, func(), error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch := make(chan appmessaging.LiveUpdate, 8)
	l.subs[accountID] = append(l.subs[accountID], ch)
	l.subscribed++
	return ch, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		for i, c := range l.subs[accountID] {
			if c == ch {
				l.subs[accountID] = append(l.subs[accountID][:i], l.subs[accountID][i+1:]...)
				close(ch)
				return
			}
		}
	}, nil
}

func (l *fakeLive) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, list := range l.subs {
		n += len(list)
	}
	return n
}

func (l *fakeLive) receive(accountID, threadID, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	l.publish(accountID, threadID, text, l.seq, false)
}

// publish hands a message update at seq to accountID's subscribers; l.mu
// is held.
func (l *fakeLive) publish(accountID, threadID, text string, seq int64, late bool) {
	for _, ch := range l.subs[accountID] {
		ch <- appmessaging.LiveUpdate{Type: event.MessageReceived, Seq: seq, Late: late, Message: messaging.Message{
			ID: "msg_" + text, AccountID: accountID, ThreadID: threadID, Content: messaging.Content{Kind: messaging.KindText, Text: text},
		}}
	}
}

// commit takes the next seq for an update published later (readLate).
func (l *fakeLive) commit() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	return l.seq
}

// readLate hands out, only now, a message committed at seq (at or before
// the head): the live feed's reader reads the log after the commit.
func (l *fakeLive) readLate(accountID, threadID, text string, seq int64, late bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.publish(accountID, threadID, text, seq, late)
}

// receiveEmail publishes an email.received event of an email to mailbox
// in threadID.
func (l *fakeLive) receiveEmail(accountID, threadID, mailbox, subject string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	payload, _ := json.Marshal(appemail.ReceivedPayload{
		EventHeader:      appemail.EventHeader{Event: event.EmailReceived, AccountID: accountID, EmailID: "eml_" + subject, ThreadID: threadID},
		RecipientAddress: mailbox, Subject: subject})
	for _, ch := range l.subs[accountID] {
		ch <- appmessaging.LiveUpdate{Type: event.EmailReceived, Payload: payload, Seq: l.seq}
	}
}

// messages is the filter of a wait for any message.
var messages = waitFilter{messages: true}

// fallBehind ends an account's subscriptions as the live feed does with a
// subscriber that fell behind.
func (l *fakeLive) fallBehind(accountID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ch := range l.subs[accountID] {
		close(ch)
	}
	delete(l.subs, accountID)
}

// A thousand waits at once, over a hundred accounts, hold one live
// subscription per account; the thousand-and-first is refused, as is an
// account's wait beyond its share; every wait ends, and nothing of them
// remains.
func TestFeedBoundsWaits(t *testing.T) {
	// Not parallel: it counts the process's goroutines.
	live := newFakeLive()
	f := newFeed(live, 1000, 10, func(string, string) {}, slog.Default())
	defer f.close()
	goroutines := runtime.NumGoroutine()

	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for i := range 1000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := f.wait(ctx, fmt.Sprintf("acc_%03d", i%100), messages, time.Minute)
			errs <- err
		}()
	}
	require.Eventually(t, func() bool { _, waits := f.listening(); return waits == 1000 }, 10*time.Second, time.Millisecond)
	accounts, _ := f.listening()
	require.Equal(t, 100, accounts)
	require.Equal(t, 100, live.open(), "one subscription per account, however many wait")

	_, _, err := f.wait(t.Context(), "acc_new", messages, time.Minute)
	require.Equal(t, "too_many_waits", failure.As(err).Code, "the thousand-and-first wait is refused")
	require.Equal(t, failure.KindRateLimited, failure.As(err).Kind)

	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		require.ErrorIs(t, err, context.Canceled)
	}
	accounts, waits := f.listening()
	require.Zero(t, accounts)
	require.Zero(t, waits)
	require.Zero(t, live.open(), "the subscriptions ended with their waits")
	// Polled here rather than with require.Eventually, whose own
	// goroutine would count.
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > goroutines; time.Sleep(10 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "the accounts' readers ended: %d goroutines, %d before", runtime.NumGoroutine(), goroutines)
	}
}

func TestFeedBoundsOneAccountsWaits(t *testing.T) {
	t.Parallel()
	f := newFeed(newFakeLive(), 1000, 2, func(string, string) {}, slog.Default())
	defer f.close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for range 2 {
		go func() { _, _, _ = f.wait(ctx, "acc_a", messages, time.Minute) }()
	}
	require.Eventually(t, func() bool { _, waits := f.listening(); return waits == 2 }, 5*time.Second, time.Millisecond)
	_, _, err := f.wait(t.Context(), "acc_a", messages, time.Minute)
	require.Equal(t, "too_many_waits", failure.As(err).Code)
	_, ok, err := f.wait(t.Context(), "acc_b", messages, 10*time.Millisecond)
	require.NoError(t, err, "another account still waits")
	require.False(t, ok)
}

// A message goes to every wait of its account (and thread), once; a
// subscription the live feed ended is taken again; watches hear of their
// account's messages, of every thread.
func TestFeedHandsOutMessages(t *testing.T) {
	t.Parallel()
	live := newFakeLive()
	watched := make(chan string, 10)
	f := newFeed(live, 1000, 10, func(accountID, threadID string) { watched <- accountID + "/" + threadID }, slog.Default())
	defer f.close()

	release, err := f.watch(t.Context(), "acc_a")
	require.NoError(t, err)
	type got struct {
		m   messaging.Message
		ok  bool
		err error
	}
	waitFor := func(threadID string) <-chan got {
		out := make(chan got, 1)
		go func() {
			a, ok, err := f.wait(t.Context(), "acc_a", waitFilter{messages: true, threadID: threadID}, 10*time.Second)
			var m messaging.Message
			if a.message != nil {
				m = *a.message
			}
			out <- got{m, ok, err}
		}()
		return out
	}
	anyThread, thread2 := waitFor(""), waitFor("thr_2")
	require.Eventually(t, func() bool { _, waits := f.listening(); return waits == 2 }, 5*time.Second, time.Millisecond)

	live.receive("acc_a", "thr_1", "one")
	r := <-anyThread
	require.True(t, r.ok)
	require.Equal(t, "one", r.m.Content.Text)
	require.Equal(t, "acc_a/thr_1", <-watched)
	select {
	case <-thread2:
		t.Fatal("a wait for thr_2 took thr_1's message")
	case <-time.After(50 * time.Millisecond):
	}

	live.fallBehind("acc_a")
	require.Eventually(t, func() bool { return live.open() == 1 }, 5*time.Second, time.Millisecond, "taken again")
	live.receive("acc_a", "thr_2", "two")
	r = <-thread2
	require.True(t, r.ok)
	require.Equal(t, "two", r.m.Content.Text)
	require.Equal(t, "acc_a/thr_2", <-watched)

	release()
	accounts, _ := f.listening()
	require.Zero(t, accounts)
	require.Zero(t, live.open())
}

// A wait returns only what was committed after it began: an update the
// account's subscription hands out after the wait joined, but committed
// before (the reader had not read it yet), is not the wait's, unless it
// is Late (it may have committed after the wait began).
func TestFeedWaitTakesOnlyWhatCameAfterIt(t *testing.T) {
	t.Parallel()
	live := newFakeLive()
	f := newFeed(live, 1000, 10, func(string, string) {}, slog.Default())
	defer f.close()
	release, err := f.watch(t.Context(), "acc_a")
	require.NoError(t, err)
	defer release()
	waitFrom := func() <-chan arrival {
		out := make(chan arrival, 1)
		go func() {
			a, _, _ := f.wait(t.Context(), "acc_a", messages, 10*time.Second)
			out <- a
		}()
		require.Eventually(t, func() bool { _, waits := f.listening(); return waits == 1 }, 5*time.Second, time.Millisecond)
		return out
	}

	before := live.commit() // committed, not yet read
	out := waitFrom()
	live.readLate("acc_a", "thr_1", "before", before, false)
	live.receive("acc_a", "thr_1", "after")
	require.Equal(t, "after", (<-out).message.Content.Text)

	racing := live.commit() // its transaction took its seq before the head was read
	out = waitFrom()
	live.readLate("acc_a", "thr_1", "racing", racing, true)
	require.Equal(t, "racing", (<-out).message.Content.Text)
}

// A received email goes to the waits for email that it matches (of its
// thread, of its mailbox, or any), never to a wait for messages; a
// message never to a wait for email.
func TestFeedHandsOutEmails(t *testing.T) {
	t.Parallel()
	live := newFakeLive()
	f := newFeed(live, 1000, 10, func(string, string) {}, slog.Default())
	defer f.close()
	waitFor := func(filter waitFilter) <-chan arrival {
		out := make(chan arrival, 1)
		go func() {
			a, _, _ := f.wait(t.Context(), "acc_a", filter, 10*time.Second)
			out <- a
		}()
		return out
	}
	anyEmail := waitFor(waitFilter{emails: true})
	ofMailbox := waitFor(waitFilter{emails: true, mailbox: "sales@mail.example.com"})
	ofThread := waitFor(waitFilter{emails: true, threadID: "eth_2"})
	either := waitFor(waitFilter{messages: true, emails: true})
	onlyMessages := waitFor(messages)
	require.Eventually(t, func() bool { _, waits := f.listening(); return waits == 5 }, 5*time.Second, time.Millisecond)

	live.receiveEmail("acc_a", "eth_1", "Support@mail.example.com", "first")
	require.Equal(t, "first", (<-anyEmail).email.Subject)
	require.Equal(t, "first", (<-either).email.Subject)
	live.receive("acc_a", "thr_1", "hello")
	require.Equal(t, "hello", (<-onlyMessages).message.Content.Text)
	live.receiveEmail("acc_a", "eth_2", "sales@mail.example.com", "second")
	require.Equal(t, "second", (<-ofMailbox).email.Subject, "the mailbox is matched whatever its case")
	require.Equal(t, "second", (<-ofThread).email.Subject)
}

// Closing the feed ends its waits.
func TestFeedCloseEndsWaits(t *testing.T) {
	t.Parallel()
	f := newFeed(newFakeLive(), 1000, 10, func(string, string) {}, slog.Default())
	done := make(chan error, 1)
	go func() {
		_, _, err := f.wait(t.Context(), "acc_a", messages, time.Minute)
		done <- err
	}()
	require.Eventually(t, func() bool { _, waits := f.listening(); return waits == 1 }, 5*time.Second, time.Millisecond)
	f.close()
	require.Equal(t, failure.KindUnavailable, failure.As(<-done).Kind)
	_, _, err := f.wait(t.Context(), "acc_a", messages, time.Minute)
	require.Equal(t, failure.KindUnavailable, failure.As(err).Kind)
}
