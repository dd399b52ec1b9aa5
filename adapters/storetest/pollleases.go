package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/channels"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/ident"
)

// PollLeasesFixture is one migrated database and what opens processes'
// poll leases on it.
type PollLeasesFixture struct {
	Accounts accounts.Store
	// Open opens the poll leases of a process of their own (a pool and
	// session of its own) on the database, its clock off by skew.
	Open func(t *testing.T, skew time.Duration) channels.PollLeases
	// Behind opens a process's poll leases through a link to the
	// database that faults controls; nil where a lease lives as long as
	// its process and no link can fail under it (SQLite's lock files).
	Behind func(t *testing.T) (channels.PollLeases, PollFaults)
}

// PollFaults break the link between a process and its database: Freeze
// stops it both ways, as a stalled process (or a paused VM) does, until
// Thaw; Cut closes it, as the death of the process does.
type PollFaults struct {
	Freeze, Thaw, Cut func()
}

// pollBundle is a PollLeasesFixture with two Telegram bots.
type pollBundle struct {
	PollLeasesFixture
	bot, other string
}

func newPollBundle(t *testing.T, open func(t *testing.T) PollLeasesFixture) pollBundle {
	t.Helper()
	ctx := context.Background()
	f := open(t)
	acc := newAccount("polling")
	require.NoError(t, f.Accounts.Repos().InsertAccount(ctx, acc))
	b := pollBundle{PollLeasesFixture: f}
	for i, id := range []*string{&b.bot, &b.other} {
		n := account.Number{ID: ident.New(ident.Number), AccountID: acc.ID, Number: []string{"+14155550103", "+14155550104"}[i],
			Service: account.Telegram, Provider: account.ProviderTelegram, SealedSettings: []byte{1}, Enabled: true, CreatedAt: at}
		require.NoError(t, f.Accounts.Repos().InsertNumber(ctx, n))
		*id = n.ID
	}
	return b
}

// requireLost requires l lost: its operations answer ErrPollLeaseLost
// and Done is closed.
func requireLost(t *testing.T, l channels.PollLease) {
	t.Helper()
	ctx := context.Background()
	require.ErrorIs(t, l.Advance(ctx, 1_000_000), channels.ErrPollLeaseLost)
	require.ErrorIs(t, l.Check(ctx), channels.ErrPollLeaseLost)
	select {
	case <-l.Done():
	default:
		t.Fatal("Done is not closed")
	}
}

// PollLeases runs the contract of channels.PollLeases against the
// fixture that open returns; open must give each call its own empty,
// migrated database.
func PollLeases(t *testing.T, open func(t *testing.T) PollLeasesFixture) {
	ctx := context.Background()

	t.Run("OneHolderAtATimeWhateverTheClocks", func(t *testing.T) {
		t.Parallel()
		f := newPollBundle(t, open)
		// Two processes whose clocks are 4 s apart: a lease compares
		// no clock, so neither takes the other's nor loses its own.
		a, b := f.Open(t, 2*time.Second), f.Open(t, -2*time.Second)
		la, err := a.TakePollLease(ctx, f.bot)
		require.NoError(t, err)
		_, err = b.TakePollLease(ctx, f.bot)
		require.ErrorIs(t, err, channels.ErrPollLeaseHeld, "another process holds it")
		_, err = a.TakePollLease(ctx, f.bot)
		require.ErrorIs(t, err, channels.ErrPollLeaseHeld, "another lease of this process holds it")
		lo, err := b.TakePollLease(ctx, f.other)
		require.NoError(t, err, "leases are per number")
		require.NoError(t, la.Check(ctx))
		require.NoError(t, lo.Check(ctx))

		require.NoError(t, la.Release(ctx))
		requireLost(t, la)
		lb, err := b.TakePollLease(ctx, f.bot)
		require.NoError(t, err, "a released lease is free at once")
		require.NoError(t, lb.Check(ctx))
		require.NoError(t, lo.Check(ctx), "releasing one lease leaves the others")
		require.NoError(t, la.Release(ctx), "a second release is no error")
		require.NoError(t, lb.Check(ctx))
	})

	t.Run("OffsetMovesForwardAndOutlivesItsHolder", func(t *testing.T) {
		t.Parallel()
		f := newPollBundle(t, open)
		a, b := f.Open(t, 0), f.Open(t, 0)
		la, err := a.TakePollLease(ctx, f.bot)
		require.NoError(t, err)
		offset, err := la.Offset(ctx)
		require.NoError(t, err)
		require.Zero(t, offset, "nothing stored yet")
		require.NoError(t, la.Advance(ctx, 42))
		require.NoError(t, la.Advance(ctx, 40), "a smaller offset is no error")
		offset, err = la.Offset(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(42), offset, "the offset only moves forward")

		lo, err := a.TakePollLease(ctx, f.other)
		require.NoError(t, err)
		offset, err = lo.Offset(ctx)
		require.NoError(t, err)
		require.Zero(t, offset, "offsets are per number")

		require.NoError(t, la.Release(ctx))
		lb, err := b.TakePollLease(ctx, f.bot)
		require.NoError(t, err)
		offset, err = lb.Offset(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(42), offset, "the next holder starts where the last one stopped")
		require.NoError(t, lb.Advance(ctx, 43))
		offset, err = lb.Offset(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(43), offset)
	})

	t.Run("ConcurrentTakersOneWins", func(t *testing.T) {
		t.Parallel()
		f := newPollBundle(t, open)
		const n = 4
		procs := make([]channels.PollLeases, n)
		for i := range procs {
			procs[i] = f.Open(t, 0)
		}
		leases, errs := make([]channels.PollLease, n), make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { leases[i], errs[i] = procs[i].TakePollLease(ctx, f.bot) })
		}
		wg.Wait()
		won := 0
		for i, err := range errs {
			if err == nil {
				won++
				require.NoError(t, leases[i].Advance(ctx, 7))
				continue
			}
			require.ErrorIs(t, err, channels.ErrPollLeaseHeld)
		}
		require.Equal(t, 1, won, "exactly one process holds the lease")
	})

	t.Run("AHolderThatStallsOrDiesLosesItsLease", func(t *testing.T) {
		t.Parallel()
		f := newPollBundle(t, open)
		if f.Behind == nil {
			t.Skip("a lease here lives as long as its process")
		}
		stalled, faults := f.Behind(t)
		other := f.Open(t, 0)
		ls, err := stalled.TakePollLease(ctx, f.bot)
		require.NoError(t, err)
		require.NoError(t, ls.Advance(ctx, 10))

		// The holder stalls: the database ends its session, and the
		// lease is another's within PollLeaseStall.
		faults.Freeze()
		var lo channels.PollLease
		require.Eventually(t, func() bool {
			lo, err = other.TakePollLease(ctx, f.bot)
			return err == nil
		}, 20*time.Second, 100*time.Millisecond, "another process takes the lease of a stalled holder")
		require.NoError(t, lo.Advance(ctx, 12))
		// Back, the stalled holder finds its lease lost and writes nothing.
		faults.Thaw()
		require.Eventually(t, func() bool { return errors.Is(ls.Check(ctx), channels.ErrPollLeaseLost) }, 10*time.Second, 50*time.Millisecond)
		requireLost(t, ls)
		offset, err := lo.Offset(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(12), offset, "the stalled holder moved nothing")

		// A holder whose link dies frees its lease at once.
		dying, faults := f.Behind(t)
		ld, err := dying.TakePollLease(ctx, f.other)
		require.NoError(t, err)
		faults.Cut()
		require.Eventually(t, func() bool {
			_, err = other.TakePollLease(ctx, f.other)
			return err == nil
		}, 2*time.Second, 20*time.Millisecond, "the lease of a holder whose connection died is free at once")
		require.Eventually(t, func() bool { return errors.Is(ld.Check(ctx), channels.ErrPollLeaseLost) }, 10*time.Second, 50*time.Millisecond)
		requireLost(t, ld)
	})
}
