// Package sandbox is the channel provider that talks to nobody: it accepts
// every well-formed message and reports it delivered at once, so that a
// developer (or a test) can use the whole API without a WhatsApp or
// Telegram account. A few reserved recipient numbers simulate failures,
// like the test numbers of hosted messaging APIs:
//
//	+15005550001  the recipient cannot be reached: the message fails at once
//	+15005550009  the channel is down: every attempt fails and is retried
//	+15005550429  the channel is rate limited: retry after one second
//
// Read receipts and typing indicators go to the same user numbers (the
// unreachable and down numbers fail them likewise) and are recorded in
// Indications when the provider has one.
package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// Reserved recipients that simulate failures.
const (
	UnreachableNumber = "+15005550001"
	DownNumber        = "+15005550009"
	RateLimitedNumber = "+15005550429"
)

// Name is the provider name agent numbers use.
const Name = account.ProviderSandbox

// Provider is the sandbox channel.
type Provider struct {
	// Indications, when set, records the read receipts and typing
	// indicators the sandbox was asked to show.
	Indications *Indications
	// Media fetches the files of simulated inbound media from the URLs
	// the simulations gave; it must be the SSRF-safe client.
	Media *http.Client
}

var _ messaging.Provider = Provider{}

// Capabilities: the sandbox sends everything, groups and reply buttons
// included (with the limits of the thread's service).
func (Provider) Capabilities() messaging.Capabilities {
	return messaging.Capabilities{
		Kinds:   []domain.Kind{domain.KindText, domain.KindImage, domain.KindVideo, domain.KindAudio, domain.KindDocument, domain.KindLocation},
		Groups:  true,
		Buttons: true,
	}
}

// Send accepts the message and reports it delivered.
func (Provider) Send(ctx context.Context, m messaging.Outbound) (messaging.Receipt, error) {
	if err := ctx.Err(); err != nil {
		return messaging.Receipt{}, err
	}
	if err := simulatedFailure(m.To); err != nil {
		return messaging.Receipt{}, err
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	return messaging.Receipt{ProviderMessageID: "sbx_" + hex.EncodeToString(b[:]), Status: domain.Delivered}, nil
}

var _ messaging.GroupProvider = Provider{}

// ApplyGroupChange accepts every group action but the join requests'
// (the sandbox's groups exist only in Switchboard's own tables, and
// nobody asks to join them).
func (Provider) ApplyGroupChange(ctx context.Context, c messaging.GroupChange) error {
	if c.Action == domain.ActionApproveJoinRequests || c.Action == domain.ActionRejectJoinRequests {
		return messaging.ErrNotSupported
	}
	return ctx.Err()
}

// simulatedFailure is the failure a reserved recipient simulates, or nil.
func simulatedFailure(to string) error {
	switch to {
	case UnreachableNumber:
		return &messaging.ProviderError{Code: "recipient_unreachable", Message: "the sandbox recipient " + to + " cannot be reached", Permanent: true}
	case DownNumber:
		return &messaging.ProviderError{Code: "provider_unavailable", Message: "the sandbox channel is down for " + to}
	case RateLimitedNumber:
		return &messaging.ProviderError{Code: "rate_limited", Message: "the sandbox channel is rate limited", RetryAfter: time.Second}
	}
	return nil
}

var _ messaging.Reactor = Provider{}

// React accepts the agent's reaction: the sandbox's messages exist only
// in Switchboard's own tables, where the reaction is stored already.
func (Provider) React(ctx context.Context, in messaging.OutboundReaction) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return simulatedFailure(in.To)
}

// TypingWindow is how long the sandbox counts a typing indicator as
// shown, as Telegram does.
const TypingWindow = 5 * time.Second

var _ messaging.Indicator = Provider{}

// Indicators: read receipts and typing, in one-to-one chats and groups;
// typing does not mark read.
func (Provider) Indicators() messaging.Indicators {
	return messaging.Indicators{ReadReceipts: true, Groups: true, TypingWindow: TypingWindow}
}

// MarkRead records the read receipt.
func (p Provider) MarkRead(ctx context.Context, in messaging.Indication) error {
	return p.indicate(ctx, IndicationRead, in)
}

// Typing records the typing indicator.
func (p Provider) Typing(ctx context.Context, in messaging.Indication) error {
	return p.indicate(ctx, IndicationTyping, in)
}

func (p Provider) indicate(ctx context.Context, kind string, in messaging.Indication) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := simulatedFailure(in.To); err != nil {
		return err
	}
	p.Indications.add(Indication{Kind: kind, NumberID: in.Number.ID, ThreadID: in.ThreadID, To: in.To, MessageID: in.Latest.ID, At: time.Now().UTC()})
	return nil
}

// The kinds of indications.
const (
	IndicationRead   = "read"
	IndicationTyping = "typing"
)

// Indication is a read receipt or typing indicator the sandbox showed.
type Indication struct {
	// Kind is IndicationRead or IndicationTyping.
	Kind     string
	NumberID string
	ThreadID string
	// To is the user of an individual thread, empty in a group.
	To string
	// MessageID is the latest inbound message the indication answers.
	MessageID string
	At        time.Time
}

// maxIndications bounds what Indications keeps: the newest ones.
const maxIndications = 1000

// Indications records the indications the sandbox showed in this
// process, the newest maxIndications. It is safe for concurrent use.
type Indications struct {
	mu   sync.Mutex
	list []Indication
}

// NewIndications returns an empty record.
func NewIndications() *Indications { return &Indications{} }

func (r *Indications) add(in Indication) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.list) == maxIndications {
		r.list = append(r.list[:0], r.list[1:]...)
	}
	r.list = append(r.list, in)
}

// Of returns the indications shown in thread, oldest first.
func (r *Indications) Of(threadID string) []Indication {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Indication
	for _, in := range r.list {
		if in.ThreadID == threadID {
			out = append(out, in)
		}
	}
	return out
}
