package graph

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/application/accounts"
	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// fakeLive is a LiveFeed whose feed subscriptions the test publishes to.
type fakeLive struct {
	mu     sync.Mutex
	open   map[string]map[chan appmessaging.LiveUpdate]struct{}
	opened int
}

var _ LiveFeed = (*fakeLive)(nil)

func newFakeLive() *fakeLive {
	return &fakeLive{open: map[string]map[chan appmessaging.LiveUpdate]struct{}{}}
}

func (f *fakeLive) Subscribe(_ context.Context, accountID string) (<-chan appmessaging.LiveUpdate, func(), error) {
	ch := make(chan appmessaging.LiveUpdate, 256)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.open[accountID] == nil {
		f.open[accountID] = map[chan appmessaging.LiveUpdate]struct{}{}
	}
	f.open[accountID][ch] = struct{}{}
	f.opened++
	return ch, func() { f.end(accountID, ch) }, nil
}

// end closes a feed subscription, as Live does when it is stopped or
// falls behind.
func (f *fakeLive) end(accountID string, ch chan appmessaging.LiveUpdate) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.open[accountID][ch]; ok {
		delete(f.open[accountID], ch)
		close(ch)
	}
}

func (f *fakeLive) publish(accountID string, typ event.Type, m messaging.Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.open[accountID] {
		ch <- appmessaging.LiveUpdate{Type: typ, Message: m}
	}
}

// feeds returns how many feed subscriptions are open, all accounts'.
func (f *fakeLive) feeds() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, chans := range f.open {
		n += len(chans)
	}
	return n
}

func (f *fakeLive) endAll(accountID string) {
	f.mu.Lock()
	var chans []chan appmessaging.LiveUpdate
	for ch := range f.open[accountID] {
		chans = append(chans, ch)
	}
	f.mu.Unlock()
	for _, ch := range chans {
		f.end(accountID, ch)
	}
}

type hubBundle struct {
	live *fakeLive
	hub  *liveHub
}

func setupHub(t *testing.T, limits SubscriptionLimits) *hubBundle {
	t.Helper()
	live := newFakeLive()
	return &hubBundle{live: live, hub: newLiveHub(live, limits)}
}

// subscribe opens a subscription that ends with the test (or cancel).
func (b *hubBundle) subscribe(t *testing.T, ctx context.Context, accountID string, typ event.Type, threadID string) (<-chan *messaging.Message, context.CancelFunc, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	ch, err := b.hub.subscribe(ctx, accountID, typ, threadID)
	return ch, cancel, err
}

func receive(t *testing.T, ch <-chan *messaging.Message) *messaging.Message {
	t.Helper()
	select {
	case m, ok := <-ch:
		require.True(t, ok, "the subscription ended")
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message")
		return nil
	}
}

func requireEnded(t *testing.T, ch <-chan *messaging.Message) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("the subscription did not end")
		}
	}
}

func requireTooMany(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	fe := failure.As(err)
	require.Equal(t, failure.KindRateLimited, fe.Kind)
	require.Equal(t, "too_many_subscriptions", fe.Code)
}

func TestLiveHub(t *testing.T) {
	t.Parallel()

	t.Run("OneFeedSubscriptionPerAccount", func(t *testing.T) {
		t.Parallel()
		b := setupHub(t, SubscriptionLimits{})
		var cancels []context.CancelFunc
		for range 10 {
			_, cancel, err := b.subscribe(t, t.Context(), "acc_a", event.MessageReceived, "")
			require.NoError(t, err)
			cancels = append(cancels, cancel)
		}
		_, cancelOther, err := b.subscribe(t, t.Context(), "acc_b", event.MessageReceived, "")
		require.NoError(t, err)
		require.Equal(t, 2, b.live.feeds())
		require.Equal(t, 2, b.live.opened)
		for _, cancel := range cancels {
			cancel()
		}
		cancelOther()
		require.Eventually(t, func() bool { return b.live.feeds() == 0 }, 10*time.Second, 10*time.Millisecond,
			"the last subscription of an account ends its feed subscription")
		subs, feeds := b.hub.count("acc_a")
		require.Zero(t, subs)
		require.Zero(t, feeds)
	})

	t.Run("HandsEachSubscriptionWhatItAskedFor", func(t *testing.T) {
		t.Parallel()
		b := setupHub(t, SubscriptionLimits{})
		all, _, err := b.subscribe(t, t.Context(), "acc_a", event.MessageReceived, "")
		require.NoError(t, err)
		one, _, err := b.subscribe(t, t.Context(), "acc_a", event.MessageReceived, "thr_1")
		require.NoError(t, err)
		status, _, err := b.subscribe(t, t.Context(), "acc_a", event.MessageStatus, "")
		require.NoError(t, err)
		b.live.publish("acc_a", event.MessageReceived, messaging.Message{ID: "msg_1", ThreadID: "thr_2"})
		b.live.publish("acc_a", event.MessageStatus, messaging.Message{ID: "msg_2", ThreadID: "thr_1"})
		b.live.publish("acc_a", event.MessageReceived, messaging.Message{ID: "msg_3", ThreadID: "thr_1"})
		require.Equal(t, "msg_1", receive(t, all).ID)
		require.Equal(t, "msg_3", receive(t, all).ID)
		require.Equal(t, "msg_3", receive(t, one).ID)
		require.Equal(t, "msg_2", receive(t, status).ID)
		require.Empty(t, one)
		require.Empty(t, status)
	})

	t.Run("PerAccountLimit", func(t *testing.T) {
		t.Parallel()
		b := setupHub(t, SubscriptionLimits{PerAccount: 3})
		var cancels []context.CancelFunc
		for range 3 {
			_, cancel, err := b.subscribe(t, t.Context(), "acc_a", event.MessageReceived, "")
			require.NoError(t, err)
			cancels = append(cancels, cancel)
		}
		_, _, err := b.subscribe(t, t.Context(), "acc_a", event.MessageReceived, "")
		requireTooMany(t, err)
		// Another account has its own.
		_, _, err = b.subscribe(t, t.Context(), "acc_b", event.MessageReceived, "")
		require.NoError(t, err)
		cancels[0]()
		require.Eventually(t, func() bool {
			_, _, err := b.subscribe(t, t.Context(), "acc_a", event.MessageReceived, "")
			return err == nil
		}, 10*time.Second, 10*time.Millisecond, "an ended subscription frees its place")
	})

	t.Run("PerSocketLimit", func(t *testing.T) {
		t.Parallel()
		b := setupHub(t, SubscriptionLimits{PerSocket: 2})
		socket, other := withSocket(t.Context()), withSocket(t.Context())
		for range 2 {
			_, _, err := b.subscribe(t, socket, "acc_a", event.MessageReceived, "")
			require.NoError(t, err)
		}
		_, _, err := b.subscribe(t, socket, "acc_a", event.MessageReceived, "")
		requireTooMany(t, err)
		_, _, err = b.subscribe(t, other, "acc_a", event.MessageReceived, "")
		require.NoError(t, err, "another socket of the account")
	})

	t.Run("ConcurrentSubscribesStayWithinTheLimit", func(t *testing.T) {
		t.Parallel()
		b := setupHub(t, SubscriptionLimits{PerAccount: 10})
		var wg sync.WaitGroup
		var mu sync.Mutex
		admitted := 0
		for range 60 {
			wg.Go(func() {
				if _, _, err := b.subscribe(t, t.Context(), "acc_a", event.MessageReceived, ""); err == nil {
					mu.Lock()
					admitted++
					mu.Unlock()
				} else {
					requireTooMany(t, err)
				}
			})
		}
		wg.Wait()
		require.Equal(t, 10, admitted)
		require.Equal(t, 1, b.live.opened, "one feed subscription for all of them")
	})

	t.Run("ASlowSubscriberIsEndedAlone", func(t *testing.T) {
		t.Parallel()
		b := setupHub(t, SubscriptionLimits{})
		slow, _, err := b.subscribe(t, t.Context(), "acc_a", event.MessageReceived, "")
		require.NoError(t, err)
		fast, _, err := b.subscribe(t, t.Context(), "acc_a", event.MessageReceived, "")
		require.NoError(t, err)
		for i := range subscriptionBuffer + 1 {
			b.live.publish("acc_a", event.MessageReceived, messaging.Message{ID: "msg_" + string(rune('a'+i))})
			receive(t, fast)
		}
		requireEnded(t, slow)
		b.live.publish("acc_a", event.MessageReceived, messaging.Message{ID: "msg_last"})
		require.Equal(t, "msg_last", receive(t, fast).ID, "the others go on")
	})

	t.Run("TheFeedEndingEndsItsSubscriptions", func(t *testing.T) {
		t.Parallel()
		b := setupHub(t, SubscriptionLimits{})
		first, _, err := b.subscribe(t, t.Context(), "acc_a", event.MessageReceived, "")
		require.NoError(t, err)
		second, _, err := b.subscribe(t, t.Context(), "acc_a", event.MessageStatus, "")
		require.NoError(t, err)
		b.live.endAll("acc_a")
		requireEnded(t, first)
		requireEnded(t, second)
		// A new subscription opens a new feed subscription.
		again, _, err := b.subscribe(t, t.Context(), "acc_a", event.MessageReceived, "")
		require.NoError(t, err)
		b.live.publish("acc_a", event.MessageReceived, messaging.Message{ID: "msg_1"})
		require.Equal(t, "msg_1", receive(t, again).ID)
	})
}

// BenchmarkSubscriptionMemory reports the heap and goroutine stacks one
// open GraphQL subscription holds (B/subscription), through the resolver
// over the real live feed, 2,000 subscriptions of one account at a time.
func BenchmarkSubscriptionMemory(b *testing.B) {
	const n = 2000
	live := appmessaging.NewLive(emptyLog{}, nil, appmessaging.LiveOptions{})
	r := NewResolver(Deps{Live: live, Subscriptions: SubscriptionLimits{PerAccount: n, PerSocket: n}})
	ctx := accounts.WithPrincipal(context.Background(), accounts.Principal{AccountID: "acc_1", CredentialID: "cred_1"})
	var total float64
	for b.Loop() {
		before := heapAndStacks()
		subCtx, cancel := context.WithCancel(ctx)
		chans := make([]<-chan *messaging.Message, 0, n)
		for range n {
			ch, err := r.follow(subCtx, event.MessageReceived, nil)
			if err != nil {
				b.Fatal(err)
			}
			chans = append(chans, ch)
		}
		total += float64(heapAndStacks()-before) / n
		cancel()
		for _, ch := range chans {
			for range ch {
			}
		}
	}
	b.ReportMetric(total/float64(b.N), "B/subscription")
}

func heapAndStacks() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc + m.StackInuse)
}

// emptyLog is an event log with nothing in it.
type emptyLog struct{}

func (emptyLog) EventsAfter(context.Context, int64, []int64, int) ([]appmessaging.LoggedEvent, error) {
	return nil, nil
}
func (emptyLog) LastEventSeq(context.Context) (int64, error) { return 0, nil }
func (emptyLog) EventWakeups() (<-chan struct{}, func())     { return make(chan struct{}), func() {} }
