package messaging_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// fakeLog is an event log whose rows become visible when a test commits
// them, in any order, as concurrent transactions on Postgres do.
type fakeLog struct {
	mu        sync.Mutex
	committed map[int64]appmessaging.LoggedEvent
	wake      chan struct{}
	// reads records the also-lists the reader asked for.
	reads [][]int64
}

func newFakeLog() *fakeLog {
	return &fakeLog{committed: map[int64]appmessaging.LoggedEvent{}, wake: make(chan struct{}, 1)}
}

func (f *fakeLog) commit(seq int64, accountID string, typ event.Type, messageID string) {
	f.commitQuietly(seq, accountID, typ, messageID)
	f.signal()
}

// commitQuietly commits without a wake-up.
func (f *fakeLog) commitQuietly(seq int64, accountID string, typ event.Type, messageID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.committed[seq] = appmessaging.LoggedEvent{Seq: seq, Event: event.Event{
		AccountID: accountID, Type: typ, Payload: fmt.Appendf(nil, `{"message_id":%q}`, messageID),
	}}
}

func (f *fakeLog) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *fakeLog) EventsAfter(_ context.Context, after int64, also []int64, limit int) ([]appmessaging.LoggedEvent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads = append(f.reads, also)
	want := map[int64]bool{}
	for _, s := range also {
		want[s] = true
	}
	var out []appmessaging.LoggedEvent
	for seq := int64(1); seq <= 1000 && len(out) < limit; seq++ {
		if e, ok := f.committed[seq]; ok && (seq > after || want[seq]) {
			out = append(out, e)
		}
	}
	return out, nil
}

func (f *fakeLog) LastEventSeq(context.Context) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var last int64
	for seq := range f.committed {
		last = max(last, seq)
	}
	return last, nil
}

func (f *fakeLog) EventWakeups() (<-chan struct{}, func()) { return f.wake, func() {} }

// fakeMessages finds every message id, in the account the id names.
type fakeMessages struct{}

func (fakeMessages) MessagesByID(_ context.Context, accountID string, ids []string) ([]messaging.Message, error) {
	out := make([]messaging.Message, len(ids))
	for i, id := range ids {
		out[i] = messaging.Message{ID: id, AccountID: accountID}
	}
	return out, nil
}

func startLive(t *testing.T, log *fakeLog, opts appmessaging.LiveOptions) *appmessaging.Live {
	t.Helper()
	opts.Poll = time.Hour // only wake-ups drive the reader
	live := appmessaging.NewLive(log, fakeMessages{}, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); live.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return live
}

func next(t *testing.T, ch <-chan appmessaging.LiveUpdate) appmessaging.LiveUpdate {
	t.Helper()
	select {
	case u, ok := <-ch:
		require.True(t, ok, "the subscription ended")
		return u
	case <-time.After(10 * time.Second):
		t.Fatal("no update")
		return appmessaging.LiveUpdate{}
	}
}

func TestLive(t *testing.T) {
	t.Parallel()

	t.Run("EventsCommittedOutOfOrderAreNotLost", func(t *testing.T) {
		t.Parallel()
		log := newFakeLog()
		live := startLive(t, log, appmessaging.LiveOptions{})
		updates, stop, err := live.Subscribe(t.Context(), "acc_1")
		require.NoError(t, err)
		defer stop()

		// Seq 1 and 2 are taken by two transactions; 2 commits first.
		log.commit(2, "acc_1", event.MessageReceived, "msg_2")
		u := next(t, updates)
		require.Equal(t, "msg_2", u.Message.ID)
		require.Equal(t, int64(2), u.Seq)
		require.False(t, u.Late)
		head, err := live.Head(t.Context())
		require.NoError(t, err)
		require.Equal(t, int64(2), head)
		log.commit(1, "acc_1", event.MessageStatus, "msg_1")
		u = next(t, updates)
		require.Equal(t, "msg_1", u.Message.ID, "the late commit is found at its missing position")
		require.Equal(t, event.MessageStatus, u.Type)
		require.Equal(t, int64(1), u.Seq)
		require.True(t, u.Late, "committed after seq 2 was read, so perhaps after that head")

		log.commit(3, "acc_1", event.MessageReceived, "msg_3")
		u = next(t, updates)
		require.Equal(t, "msg_3", u.Message.ID)
		require.False(t, u.Late)
	})

	t.Run("OnlyTheAccountsMessageEvents", func(t *testing.T) {
		t.Parallel()
		log := newFakeLog()
		live := startLive(t, log, appmessaging.LiveOptions{})
		updates, stop, err := live.Subscribe(t.Context(), "acc_1")
		require.NoError(t, err)
		defer stop()

		log.commit(1, "acc_2", event.MessageReceived, "msg_other")
		log.commit(2, "acc_1", event.GroupCreated, "msg_group")
		log.commit(3, "acc_1", event.MessageReceived, "msg_mine")
		require.Equal(t, "msg_mine", next(t, updates).Message.ID)
	})

	t.Run("ReceivedEmailWithItsPayload", func(t *testing.T) {
		t.Parallel()
		log := newFakeLog()
		live := startLive(t, log, appmessaging.LiveOptions{})
		updates, stop, err := live.Subscribe(t.Context(), "acc_1")
		require.NoError(t, err)
		defer stop()

		log.commit(1, "acc_2", event.EmailReceived, "theirs")
		log.commit(2, "acc_1", event.EmailSent, "sent")
		log.commit(3, "acc_1", event.EmailReceived, "mine")
		u := next(t, updates)
		require.Equal(t, event.EmailReceived, u.Type)
		require.JSONEq(t, `{"message_id":"mine"}`, string(u.Payload))
		require.Empty(t, u.Message.ID)
	})

	t.Run("StartsAtTheEndOfTheLog", func(t *testing.T) {
		t.Parallel()
		log := newFakeLog()
		log.commit(1, "acc_1", event.MessageReceived, "msg_old")
		live := startLive(t, log, appmessaging.LiveOptions{})
		updates, stop, err := live.Subscribe(t.Context(), "acc_1")
		require.NoError(t, err)
		defer stop()

		log.commit(2, "acc_1", event.MessageReceived, "msg_new")
		require.Equal(t, "msg_new", next(t, updates).Message.ID)
	})

	t.Run("ASubscriberThatFallsBehindIsEnded", func(t *testing.T) {
		t.Parallel()
		log := newFakeLog()
		live := startLive(t, log, appmessaging.LiveOptions{Buffer: 2})
		updates, stop, err := live.Subscribe(t.Context(), "acc_1")
		require.NoError(t, err)
		defer stop()

		// Three events in one read, for a subscriber with room for two
		// (once the read the subscription started is over).
		require.Eventually(t, func() bool {
			log.mu.Lock()
			defer log.mu.Unlock()
			return len(log.reads) > 0
		}, 10*time.Second, time.Millisecond)
		for seq := int64(1); seq <= 3; seq++ {
			log.commitQuietly(seq, "acc_1", event.MessageReceived, fmt.Sprint("msg_", seq))
		}
		log.signal()
		// Not a receive before the subscriber's room is full, so that the
		// third update cannot fit.
		require.Eventually(t, func() bool { return len(updates) == 2 }, 10*time.Second, time.Millisecond)
		var got []string
		for u := range updates { // closed when it falls behind
			got = append(got, u.Message.ID)
		}
		require.Equal(t, []string{"msg_1", "msg_2"}, got)
	})

	t.Run("AGapIsForgottenAfterGapWait", func(t *testing.T) {
		t.Parallel()
		log := newFakeLog()
		var mu sync.Mutex
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		live := startLive(t, log, appmessaging.LiveOptions{GapWait: time.Minute, Now: clock})
		updates, stop, err := live.Subscribe(t.Context(), "acc_1")
		require.NoError(t, err)
		defer stop()

		log.commit(2, "acc_1", event.MessageReceived, "msg_2") // seq 1 rolled back
		require.Equal(t, "msg_2", next(t, updates).Message.ID)
		mu.Lock()
		now = now.Add(2 * time.Minute)
		mu.Unlock()
		log.commit(3, "acc_1", event.MessageReceived, "msg_3")
		require.Equal(t, "msg_3", next(t, updates).Message.ID)
		log.commit(4, "acc_1", event.MessageReceived, "msg_4")
		require.Equal(t, "msg_4", next(t, updates).Message.ID)

		log.mu.Lock()
		defer log.mu.Unlock()
		// The read after the gap was found looks for it (which read that is
		// depends on wake-ups left over and on when the clock moved), and
		// the gap expires only after a read.
		require.Contains(t, log.reads, []int64{1}, "seq 1 was looked for while it was recent")
		require.Empty(t, log.reads[len(log.reads)-1], "then forgotten")
	})
}
