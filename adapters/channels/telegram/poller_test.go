package telegram_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/telegram"
	"github.com/switchboard-dev/switchboard/adapters/channels/telegram/telegramfake"
	"github.com/switchboard-dev/switchboard/application/channels"
	"github.com/switchboard-dev/switchboard/domain/account"
)

// fakeLeases is one bot's poll lease: held elsewhere while heldElsewhere,
// else given to this process with the stored offset.
type fakeLeases struct {
	mu            sync.Mutex
	heldElsewhere bool
	offset        int64
	// stored is how many updates the inbox had at each Advance.
	stored   []int
	box      *inbox
	current  *fakeLease
	released int
}

func (f *fakeLeases) TakePollLease(context.Context, string) (channels.PollLease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.heldElsewhere || f.current != nil {
		return nil, channels.ErrPollLeaseHeld
	}
	f.current = &fakeLease{f: f, done: make(chan struct{})}
	return f.current, nil
}

// lose makes the current lease lost, as a database session that ended,
// and the lease another's.
func (f *fakeLeases) lose() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.heldElsewhere = true
	f.current.lost = true
	close(f.current.done)
}

func (f *fakeLeases) set(fn func(f *fakeLeases)) { f.mu.Lock(); fn(f); f.mu.Unlock() }

type fakeLease struct {
	f    *fakeLeases
	lost bool
	done chan struct{}
}

func (l *fakeLease) Offset(context.Context) (int64, error) {
	l.f.mu.Lock()
	defer l.f.mu.Unlock()
	if l.lost {
		return 0, channels.ErrPollLeaseLost
	}
	return l.f.offset, nil
}

func (l *fakeLease) Advance(_ context.Context, offset int64) error {
	l.f.mu.Lock()
	defer l.f.mu.Unlock()
	if l.lost {
		return channels.ErrPollLeaseLost
	}
	l.f.offset = max(l.f.offset, offset)
	l.f.stored = append(l.f.stored, l.f.box.count())
	return nil
}

func (l *fakeLease) Check(context.Context) error {
	l.f.mu.Lock()
	defer l.f.mu.Unlock()
	if l.lost {
		return channels.ErrPollLeaseLost
	}
	return nil
}

func (l *fakeLease) Done() <-chan struct{} { return l.done }

func (l *fakeLease) Release(context.Context) error {
	l.f.mu.Lock()
	defer l.f.mu.Unlock()
	if l.f.current == l {
		l.f.current = nil
	}
	if !l.lost {
		close(l.done)
	}
	l.f.released++
	return nil
}

// startPolling runs a connector polling the bot on fake under leases.
func startPolling(t *testing.T, fake *telegramfake.Server, box *inbox, leases *fakeLeases) {
	t.Helper()
	nums := numbersFunc(func() ([]account.Number, map[string]map[string]string) {
		s := fake.Settings()
		s["inbound"] = "polling"
		return []account.Number{number}, map[string]map[string]string{number.ID: s}
	})
	c := &telegram.Connector{Client: telegram.NewClient(), Inbound: &telegram.Inbound{Inbox: box}, Numbers: nums,
		Polling: true, Leases: leases, Rescan: time.Hour, Claim: 20 * time.Millisecond, PollTimeout: time.Second}
	require.NoError(t, c.Start(context.Background()))
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
}

// A poller starts from the offset stored with its lease and moves it past
// each update only once the update is stored: a take-over neither skips
// nor repeats one.
func TestPollerResumesFromTheStoredOffset(t *testing.T) {
	t.Parallel()
	fake := telegramfake.New(t, token)
	box := &inbox{seen: map[string]bool{}}
	leases := &fakeLeases{offset: 41, box: box}
	fake.Queue(telegramfake.PrivateText(40, 1, 111, "bob", "Bob", "stored by the last holder"))
	fake.Queue(telegramfake.PrivateText(41, 2, 111, "bob", "Bob", "first"))
	fake.Queue(telegramfake.PrivateText(42, 3, 111, "bob", "Bob", "second"))
	startPolling(t, fake, box, leases)

	require.Eventually(t, func() bool { return box.count() == 2 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, "first", box.received[0].Content.Text)
	require.Equal(t, "second", box.received[1].Content.Text)
	require.Eventually(t, func() bool {
		leases.mu.Lock()
		defer leases.mu.Unlock()
		return leases.offset == 43
	}, 10*time.Second, 10*time.Millisecond)
	leases.mu.Lock()
	require.Equal(t, []int{1, 2}, leases.stored, "each advance follows the update's storing")
	leases.mu.Unlock()
	require.Zero(t, fake.Conflicts())
}

// A bot whose lease another process holds is not polled here until the
// lease is free; a poller whose lease is lost stops at once, gives the
// lease up and polls no more.
func TestPollerPollsOnlyUnderItsLease(t *testing.T) {
	t.Parallel()
	fake := telegramfake.New(t, token)
	box := &inbox{seen: map[string]bool{}}
	leases := &fakeLeases{heldElsewhere: true, box: box}
	startPolling(t, fake, box, leases)
	fake.Queue(telegramfake.PrivateText(1, 1, 111, "bob", "Bob", "one"))
	require.Never(t, func() bool { return fake.Polls() > 0 }, 300*time.Millisecond, 10*time.Millisecond,
		"another process holds the lease")

	leases.set(func(f *fakeLeases) { f.heldElsewhere = false })
	require.Eventually(t, func() bool { return box.count() == 1 }, 10*time.Second, 10*time.Millisecond)

	leases.lose()
	require.Eventually(t, func() bool {
		leases.mu.Lock()
		defer leases.mu.Unlock()
		return leases.released == 1
	}, 10*time.Second, 10*time.Millisecond, "the poller gives the lost lease up")
	polls := fake.Polls()
	fake.Queue(telegramfake.PrivateText(2, 2, 111, "bob", "Bob", "two"))
	require.Never(t, func() bool { return fake.Polls() > polls || box.count() > 1 }, 300*time.Millisecond, 10*time.Millisecond,
		"a poller that lost its lease asks Telegram for nothing more")
}
