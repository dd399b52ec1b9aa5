package channels

import (
	"context"

	"github.com/switchboard-dev/switchboard/domain/failure"
)

// PollLeases elect, for each agent number whose provider is polled (a
// Telegram bot in polling mode), the one process that polls it, and keep
// the number's polling offset. A lease needs no clock: it is held as
// long as the holder's hold on the database lives (a Postgres session,
// an open lock file beside the SQLite file), so the database itself
// frees it the moment its holder dies, and a holder that stops answering
// (a stalled process) loses it within seconds.
type PollLeases interface {
	// TakePollLease takes the lease on polling the number for this
	// process. It returns ErrPollLeaseHeld when a holder has it already
	// (another process, or another lease of this one), and a failure of
	// kind Unavailable when the database does not answer.
	TakePollLease(ctx context.Context, numberID string) (PollLease, error)
}

// PollLease is a process's hold on polling one number. Once lost it
// stays lost: the holder stops polling and takes a new lease.
type PollLease interface {
	// Offset is the number's stored offset: the first update not yet
	// stored (0 when none was).
	Offset(ctx context.Context) (int64, error)
	// Advance stores offset as the number's: the updates before it are
	// stored. The offset only moves forward (a smaller one leaves it as
	// it is). It returns ErrPollLeaseLost, and writes nothing, once the
	// lease is lost.
	Advance(ctx context.Context, offset int64) error
	// Check asks the database whether the lease is still held: nil when
	// it is, ErrPollLeaseLost once it is not.
	Check(ctx context.Context) error
	// Done is closed once the lease is lost or released.
	Done() <-chan struct{}
	// Release gives the lease up, for another process to take.
	Release(ctx context.Context) error
}

// ErrPollLeaseHeld is TakePollLease's answer while another holder has
// the number's lease.
var ErrPollLeaseHeld = &failure.Error{Kind: failure.KindConflict, Code: "poll_lease_held", Message: "another process polls this number"}

// ErrPollLeaseLost is the error of a lease's operations once its holder
// lost it: its database session ended (the database restarted, the
// connection broke, or the holder stalled).
var ErrPollLeaseLost = &failure.Error{Kind: failure.KindConflict, Code: "poll_lease_lost", Message: "the poll lease was lost"}
