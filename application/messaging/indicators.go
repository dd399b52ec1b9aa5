package messaging

import (
	"context"
	"errors"
	"time"

	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// Indicator is what a provider implements when its platform shows a user
// that the agent read their messages or is typing. A provider without it
// answers both use cases 501 not_supported_by_provider.
//
// Errors: a *ProviderError for a failure the provider explained; ctx's
// error when ctx ends first.
type Indicator interface {
	// Indicators says what the provider's platform shows.
	Indicators() Indicators
	// MarkRead tells the user that the agent read their messages up to
	// and including in.Latest. It is called only when Indicators says
	// ReadReceipts.
	MarkRead(ctx context.Context, in Indication) error
	// Typing shows the user that the agent is typing, for up to
	// Indicators().TypingWindow or until the agent's next message.
	Typing(ctx context.Context, in Indication) error
}

// Indicators are what a provider's platform shows a user.
type Indicators struct {
	// ReadReceipts tells whether the user can be shown that their
	// messages were read (Telegram bots cannot).
	ReadReceipts bool
	// Groups tells whether read receipts and typing show in groups.
	Groups bool
	// TypingWindow is how long one typing call shows; a thread gets at
	// most one typing call per window.
	TypingWindow time.Duration
	// TypingMarksRead tells whether a typing call also marks the latest
	// inbound message read (WhatsApp's typing indicator does).
	TypingMarksRead bool
}

// Indication is a read receipt or typing indicator handed to a provider.
type Indication struct {
	Number account.Number
	// Settings are the number's opened provider settings.
	Settings   map[string]string
	ThreadID   string
	ThreadType messaging.ThreadType
	// To is the user of an individual thread (empty for a group).
	To string
	// Latest is the thread's latest inbound message.
	Latest messaging.Message
}

// Throttle admits at most one call per key and window, across every
// replica that shares its store.
//
// Errors: the store's (an unavailable database).
type Throttle interface {
	// Claim takes key's turn when no call took it within the last window
	// and returns true; otherwise it returns false and how long until
	// the next turn.
	Claim(ctx context.Context, key string, window time.Duration) (bool, time.Duration, error)
	// Release gives back a turn Claim took, for a call that did not
	// happen.
	Release(ctx context.Context, key string, window time.Duration) error
}

// ReadResult is the answer to marking a thread read.
type ReadResult struct {
	ThreadID string
	Service  account.Service
	// ReadReceipts is false when the channel has no read receipts
	// (Telegram bots): nothing was sent and no message moved.
	ReadReceipts bool
	// MessageID is the latest inbound message, which the receipt names.
	MessageID string
	// MarkedRead counts the inbound messages moved from received to read.
	MarkedRead int
}

// NoReadReceipts is what an answer says when the channel has no read
// receipts.
const NoReadReceipts = "this channel has no read receipts (Telegram bots cannot mark messages read): nothing was sent and no message changed"

// TypingResult is the answer to showing typing in a thread.
type TypingResult struct {
	ThreadID string
	Service  account.Service
	// Sent is false when a typing call of the thread is inside its
	// window: the provider was not called.
	Sent bool
	// Window is how long one typing call shows at most.
	Window time.Duration
	// RetryAfter, when Sent is false, is how long until the next typing
	// call would be sent.
	RetryAfter time.Duration
	// MessageID is the latest inbound message.
	MessageID string
	// MarkedRead counts the inbound messages moved from received to read
	// (providers whose typing call marks read).
	MarkedRead int
}

// WindowSeconds is Window in whole seconds, rounded up.
func (r TypingResult) WindowSeconds() int { return ceilSeconds(r.Window) }

// RetryAfterSeconds is RetryAfter in whole seconds, rounded up (0 when
// the call was sent).
func (r TypingResult) RetryAfterSeconds() int { return ceilSeconds(r.RetryAfter) }

func ceilSeconds(d time.Duration) int { return int((d + time.Second - 1) / time.Second) }

// unreadScanLimit bounds the messages one read receipt looks through
// for inbound messages still received, newest first.
const unreadScanLimit = 200

// indicationTarget is what a read receipt or typing call is about.
type indicationTarget struct {
	thread    messaging.Thread
	indicator Indicator
	caps      Indicators
	in        Indication
	// unread are the newest inbound messages still received, up to the
	// first one read.
	unread []messaging.Message
}

// MarkRead marks a thread of the account read up to its latest inbound
// message: the provider shows the user the message was read, and the
// thread's inbound messages still received move to read, each with its
// message.status event. On a channel without read receipts nothing is
// sent or moved, and the answer says so.
//
// Errors: NotFound for a thread that is not the account's; Invalid
// no_inbound_message when the user never wrote, and
// not_supported_by_provider for a group thread the provider cannot
// mark; NotImplemented when the provider has no indicators; Unavailable
// provider_refused when the provider refused.
func (s *Service) MarkRead(ctx context.Context, accountID, threadID string) (ReadResult, error) {
	t, err := s.indicationTarget(ctx, accountID, threadID, func(c Indicators) bool { return c.ReadReceipts })
	if err != nil {
		return ReadResult{}, err
	}
	out := ReadResult{ThreadID: t.thread.ID, Service: t.thread.Service, ReadReceipts: t.caps.ReadReceipts, MessageID: t.in.Latest.ID}
	if !t.caps.ReadReceipts {
		return out, nil
	}
	if err := t.indicator.MarkRead(ctx, t.in); err != nil {
		return ReadResult{}, providerRefused("the read receipt", err)
	}
	out.MarkedRead, err = s.markRead(ctx, t)
	return out, err
}

// Typing shows the user of a thread of the account that the agent is
// typing. A thread gets at most one provider call per typing window, on
// every replica: a repeat inside the window calls nothing and answers
// Sent false. Where the provider's typing call marks read, the thread's
// inbound messages move to read as MarkRead moves them.
//
// Errors: those of MarkRead, and Unavailable when the throttle's store
// is away.
func (s *Service) Typing(ctx context.Context, accountID, threadID string) (TypingResult, error) {
	t, err := s.indicationTarget(ctx, accountID, threadID, func(c Indicators) bool { return c.TypingMarksRead })
	if err != nil {
		return TypingResult{}, err
	}
	out := TypingResult{ThreadID: t.thread.ID, Service: t.thread.Service, Window: t.caps.TypingWindow, MessageID: t.in.Latest.ID}
	key := "typing:" + t.thread.ID
	if s.throttle != nil && t.caps.TypingWindow > 0 {
		ok, wait, err := s.throttle.Claim(ctx, key, t.caps.TypingWindow)
		if err != nil {
			return TypingResult{}, failure.Unavailable("the typing window cannot be checked", err)
		}
		if !ok {
			out.RetryAfter = wait
			return out, nil
		}
	}
	if err := t.indicator.Typing(ctx, t.in); err != nil {
		if s.throttle != nil && t.caps.TypingWindow > 0 {
			// A call that failed shows nothing: the next may go at once.
			_ = s.throttle.Release(context.WithoutCancel(ctx), key, t.caps.TypingWindow)
		}
		return TypingResult{}, providerRefused("the typing indicator", err)
	}
	out.Sent = true
	if t.caps.TypingMarksRead {
		out.MarkedRead, err = s.markRead(ctx, t)
	}
	return out, err
}

// indicationTarget checks a read receipt or typing call and reads what
// it needs: the thread, its number and provider, the latest inbound
// message and, when marks says the call marks read, the unread ones.
func (s *Service) indicationTarget(ctx context.Context, accountID, threadID string, marks func(Indicators) bool) (indicationTarget, error) {
	r := s.store.Repos()
	thread, err := s.thread(ctx, r, accountID, threadID)
	if err != nil {
		return indicationTarget{}, err
	}
	number, err := s.sendingNumber(ctx, r, accountID, thread.Service, thread.AgentNumber)
	if err != nil {
		return indicationTarget{}, err
	}
	provider, ok := s.providers.Provider(number.Provider)
	indicator, can := provider.(Indicator)
	if !ok || !can {
		return indicationTarget{}, &failure.Error{Kind: failure.KindNotImplemented, Code: "not_supported_by_provider",
			Message: "the " + string(number.Provider) + " provider shows no read receipts or typing"}
	}
	caps := indicator.Indicators()
	if thread.Type == messaging.Group && !caps.Groups {
		return indicationTarget{}, messaging.GroupIndicationsNotSupported(number.Provider)
	}
	if err := messaging.CheckIndication(thread); err != nil {
		return indicationTarget{}, err
	}
	latest, unread, err := s.inboundTail(ctx, r, thread, marks(caps))
	if err != nil {
		return indicationTarget{}, err
	}
	settings, err := s.opener.NumberSettings(number)
	if err != nil {
		return indicationTarget{}, err
	}
	in := Indication{Number: number, Settings: settings, ThreadID: thread.ID, ThreadType: thread.Type, Latest: latest}
	if thread.Type == messaging.Individual {
		in.To = thread.Contact
	}
	return indicationTarget{thread: thread, indicator: indicator, caps: caps, in: in, unread: unread}, nil
}

// inboundTail reads a thread's messages newest first: the latest inbound
// one and, with unreadToo, the inbound ones still received, up to the
// first one read or unreadScanLimit messages. A thread whose inbound
// messages are all gone answers ErrNoInboundMessage.
func (s *Service) inboundTail(ctx context.Context, r Repos, t messaging.Thread, unreadToo bool) (messaging.Message, []messaging.Message, error) {
	var (
		latest  *messaging.Message
		unread  []messaging.Message
		before  *MessageCursor
		scanned int
	)
	// The user's latest message is most often among the newest few.
	for limit := DefaultPageSize; ; limit = MaxPageSize {
		page, err := r.ThreadMessages(ctx, t.AccountID, t.ID, before, limit)
		if err != nil {
			return messaging.Message{}, nil, err
		}
		for _, m := range page {
			scanned++
			if m.Direction != messaging.Inbound {
				continue
			}
			if latest == nil {
				latest = &m
			}
			if !unreadToo || !m.Unread() {
				return *latest, unread, nil
			}
			unread = append(unread, m)
		}
		if latest != nil && scanned >= unreadScanLimit {
			return *latest, unread, nil
		}
		if len(page) < limit {
			break
		}
		c := MessageCursorOf(page[len(page)-1])
		before = &c
	}
	if latest == nil {
		return messaging.Message{}, nil, messaging.ErrNoInboundMessage
	}
	return *latest, unread, nil
}

// markRead moves the target's unread inbound messages to read, with their
// message.status events, in one commit.
func (s *Service) markRead(ctx context.Context, t indicationTarget) (int, error) {
	var b writes.Batch
	for _, m := range t.unread {
		b.Add(s.statusChange(m, messaging.Read, "", "", "", t.thread.Type))
	}
	if err := s.committer.Commit(ctx, b); err != nil {
		return 0, err
	}
	return len(t.unread), nil
}

// providerRefused is the failure of a call the provider refused while a
// request waited: Unavailable provider_refused, with the provider's
// words and when it allows the next try. Other errors are returned as
// they are.
func providerRefused(what string, err error) error {
	var pe *ProviderError
	if errors.As(err, &pe) {
		return &failure.Error{Kind: failure.KindUnavailable, Code: "provider_refused",
			Message: "the provider refused " + what + ": " + pe.Message, RetryAfter: pe.RetryAfter, Err: err}
	}
	return err
}
