package messaging

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/jobs"
	"github.com/switchboard-dev/switchboard/domain/messaging"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// ReactKind is the job kind that sets or takes back the agent's reaction
// at the provider.
const ReactKind = "message.react"

// Reactor is what a provider implements when its platform lets the agent
// react to a message. A provider without it answers React 501
// not_supported_by_provider.
//
// Errors: a *ProviderError for a failure the provider explained; ctx's
// error when ctx ends first.
type Reactor interface {
	// React sets the agent's reaction on in.Target, or takes it back when
	// in.Emoji is empty.
	React(ctx context.Context, in OutboundReaction) error
}

// OutboundReaction is the agent's reaction handed to a provider.
type OutboundReaction struct {
	Number account.Number
	// Settings are the number's opened provider settings.
	Settings   map[string]string
	ThreadID   string
	ThreadType messaging.ThreadType
	// To is the user of an individual thread (empty for a group).
	To string
	// Target is the message reacted to, with the provider's id for it
	// (empty when the provider never had it: a failed message, or the
	// sandbox's inbound one).
	Target messaging.Message
	// Emoji is empty to take the reaction back.
	Emoji string
}

// EmojiCheck tells whether a string is exactly one emoji.
type EmojiCheck interface {
	IsEmoji(s string) bool
}

// ReactInput is the agent's reaction to a message of the account: Emoji
// sets it, Remove takes it back.
type ReactInput struct {
	AccountID string
	MessageID string
	Emoji     string
	Remove    bool
	// EmojiField names the emoji's field in the request, for errors.
	EmojiField []any
}

// reactPayload is the reaction job's payload: the message whose agent
// reaction is to be sent as it is stored when the job runs, so that jobs
// run in any order leave the provider with the latest.
type reactPayload struct {
	MessageID string `json:"message_id"`
}

// React sets (or, with Remove, takes back) the agent number's reaction on
// a message of the account: it stores the reaction, records the
// message.reaction event and queues the provider call, in one commit.
// Setting the reaction the message has already, or taking back one it
// does not have, changes nothing and answers the same.
//
// Errors: NotFound for a message that is not the account's; Invalid
// (naming the emoji field) for an emoji that is not exactly one emoji;
// Forbidden number_not_permitted when the thread's agent number is
// disabled; NotImplemented when the provider cannot react.
func (s *Service) React(ctx context.Context, in ReactInput) (messaging.Reaction, error) {
	field := in.EmojiField
	if field == nil {
		field = []any{"emoji"}
	}
	if !in.Remove && (s.emoji == nil || !s.emoji.IsEmoji(in.Emoji)) {
		return messaging.Reaction{}, messaging.ErrNotOneEmoji(field...)
	}
	if in.Remove {
		in.Emoji = ""
	}
	if !ident.Valid(ident.Message, in.MessageID) {
		return messaging.Reaction{}, failure.NotFound("message")
	}
	r := s.store.Repos()
	target, err := r.Message(ctx, in.AccountID, in.MessageID)
	if err != nil {
		return messaging.Reaction{}, err
	}
	thread, err := r.Thread(ctx, in.AccountID, target.ThreadID)
	if err != nil {
		return messaging.Reaction{}, err
	}
	number, err := s.sendingNumber(ctx, r, in.AccountID, thread.Service, thread.AgentNumber)
	if err != nil {
		return messaging.Reaction{}, err
	}
	provider, ok := s.providers.Provider(number.Provider)
	if _, can := provider.(Reactor); !ok || !can {
		return messaging.Reaction{}, &failure.Error{Kind: failure.KindNotImplemented, Code: "not_supported_by_provider",
			Message: "the " + string(number.Provider) + " provider cannot react to messages"}
	}
	now := s.now().UTC()
	reaction := messaging.Reaction{
		MessageID: target.ID, TargetProviderID: target.ProviderMessageID, AccountID: in.AccountID, ThreadID: thread.ID,
		Service: thread.Service, Reactor: number.Number, FromAgent: true, Emoji: in.Emoji, At: now,
	}
	current, err := r.Reactions(ctx, in.AccountID, []string{target.ID})
	if err != nil {
		return messaging.Reaction{}, err
	}
	if agentEmoji(current[target.ID], number.Number) == in.Emoji {
		return reaction, nil
	}
	payload, err := json.Marshal(reactPayload{MessageID: target.ID})
	if err != nil {
		return messaging.Reaction{}, err
	}
	b := writes.Batch{
		MessageReactions: []messaging.Reaction{reaction},
		Events:           []event.Event{s.reactionEvent(reaction, thread)},
		Jobs: []jobs.EnqueueParams{{
			Kind: ReactKind, Payload: payload, PaceKey: PaceKey(number), MaxAttempts: DeliveryAttempts,
			AccountID: in.AccountID, EndpointKey: EndpointKey(number),
		}},
	}
	return reaction, s.committer.Commit(ctx, b)
}

// agentEmoji is the emoji reactor has set among reactions ("" for none).
func agentEmoji(reactions []messaging.Reaction, reactor string) string {
	for _, r := range reactions {
		if r.Reactor == reactor {
			return r.Emoji
		}
	}
	return ""
}

// reactionEvent is the message.reaction event about r in thread t.
func (s *Service) reactionEvent(r messaging.Reaction, t messaging.Thread) event.Event {
	id := ident.New(ident.Event)
	now := s.now().UTC()
	payload := webhook.NewReactionPayload(id, r, t.Type, t.AgentNumber, now).JSON()
	return event.Event{ID: id, AccountID: r.AccountID, Type: event.MessageReaction, ThreadID: r.ThreadID, Payload: payload, CreatedAt: now}
}

// Reactions returns the worker of the reaction jobs.
func (s *Service) Reactions() ReactionWorker { return ReactionWorker{s: s} }

// ReactionWorker hands the agent's reactions to their providers: the
// handler of ReactKind jobs.
type ReactionWorker struct{ s *Service }

// Work sends the agent number's reaction on the job's message to the
// provider, as it is stored when the job runs (none: taken back), so that
// whatever order a message's reaction jobs run in, the last one sends the
// latest reaction. A message deleted with its account is left alone, and
// one the provider has no id for yet (still queued) is tried again later.
func (w ReactionWorker) Work(ctx context.Context, job jobs.Job) error {
	s := w.s
	var p reactPayload
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		return jobs.Permanent(fmt.Errorf("reaction payload: %w", err))
	}
	r := s.store.Repos()
	target, err := r.MessageByID(ctx, p.MessageID)
	if failure.Is(err, failure.KindNotFound) {
		return nil // deleted with its account
	}
	if err != nil {
		return err
	}
	if target.ProviderMessageID == "" && target.Status == messaging.Queued {
		return fmt.Errorf("react to %s: the message is still queued, the provider has no id for it yet", p.MessageID)
	}
	t, err := r.Thread(ctx, target.AccountID, target.ThreadID)
	if err != nil {
		return err
	}
	number, err := jobNumber(ctx, r, t.AccountID, t.Service, t.AgentNumber, "react to "+p.MessageID)
	if err != nil {
		return err
	}
	provider, ok := s.providers.Provider(number.Provider)
	reactor, can := provider.(Reactor)
	if !ok || !can {
		return jobs.Permanent(fmt.Errorf("the %s provider cannot react", number.Provider))
	}
	settings, err := s.opener.NumberSettings(number)
	if err != nil {
		return jobs.Permanent(err)
	}
	current, err := r.Reactions(ctx, target.AccountID, []string{target.ID})
	if err != nil {
		return err
	}
	in := OutboundReaction{Number: number, Settings: settings, ThreadID: t.ID, ThreadType: t.Type, Target: target,
		Emoji: agentEmoji(current[target.ID], number.Number)}
	if t.Type == messaging.Individual {
		in.To = t.Contact
	}
	return providerOutcome(reactor.React(ctx, in))
}

// jobNumber is the agent number at address on service, which must still
// be the account's and enabled, for a job (what it does, for errors): a
// number gone or disabled fails the job for good.
func jobNumber(ctx context.Context, r Repos, accountID string, service account.Service, address, what string) (account.Number, error) {
	number, err := r.NumberByAddress(ctx, service, address)
	if failure.Is(err, failure.KindNotFound) || (err == nil && (!number.Enabled || number.AccountID != accountID)) {
		return account.Number{}, jobs.Permanent(fmt.Errorf("%s: the agent number is gone or disabled", what))
	}
	return number, err
}

// providerOutcome is a job's outcome of a provider call: a failure the
// provider calls permanent fails the job for good; others are retried.
func providerOutcome(err error) error {
	var pe *ProviderError
	if errors.As(err, &pe) && pe.Permanent {
		return jobs.Permanent(err)
	}
	return err
}

// InboundReaction is a reaction a user set (or took back) on a message,
// as a provider (or the sandbox) reports it.
type InboundReaction struct {
	// AccountID, when set, must own the agent number (the sandbox).
	AccountID  string
	Service    string
	From       string
	SenderName string
	// To is the agent number.
	To string
	// ThreadID, when set, is the group the reaction was made in.
	ThreadID string
	// TargetProviderID is the provider's id of the message reacted to;
	// TargetMessageID (the sandbox) names it by Switchboard's id instead.
	TargetProviderID string
	TargetMessageID  string
	// Emoji is empty when the user took their reaction back.
	Emoji string
	// Provider, when set, is the provider the agent number must be on.
	Provider account.Provider
	// Chat, when set, records what the provider chat showed about the
	// user (a Telegram chat), as with a message.
	Chat *writes.ChatContact
}

// ReceiveReaction stores a user's reaction on the message it targets and
// records its message.reaction event, in one transaction; it never
// stores a message. A reaction to a message Switchboard does not have (or
// of another thread) is an event only, naming the provider's id. A report
// that leaves the user's reaction as it is (a provider retrying its
// webhook) records nothing.
//
// Errors: those of Receive.
func (s *Service) ReceiveReaction(ctx context.Context, in InboundReaction) (messaging.Reaction, error) {
	var p failure.Problems
	service := checkInboundAddresses(in.Service, in.From, in.To, &p)
	if utf8.RuneCountInString(in.Emoji) > 64 {
		p.Add("string_too_long", "the reaction must be at most 64 characters", "emoji")
	}
	if err := p.Err(); err != nil {
		return messaging.Reaction{}, err
	}
	var out messaging.Reaction
	decide := func(ctx context.Context, tx TxReads) (writes.Batch, error) {
		msg := InboundInput{AccountID: in.AccountID, From: in.From, SenderName: in.SenderName, To: in.To, ThreadID: in.ThreadID, Provider: in.Provider}
		n, thread, b, err := s.inboundThread(ctx, tx, msg, service)
		if err != nil {
			return writes.Batch{}, err
		}
		r := messaging.Reaction{
			TargetProviderID: in.TargetProviderID, AccountID: n.AccountID, ThreadID: thread.ID, Service: service,
			Reactor: in.From, ReactorName: strings.TrimSpace(in.SenderName), Emoji: in.Emoji, At: s.now().UTC(),
		}
		var target messaging.Message
		switch {
		case in.TargetMessageID != "" && ident.Valid(ident.Message, in.TargetMessageID):
			target, err = tx.Message(ctx, n.AccountID, in.TargetMessageID)
		case in.TargetMessageID != "":
			err = failure.NotFound("message")
		default:
			target, err = tx.MessageByProviderID(ctx, service, in.TargetProviderID)
		}
		if err != nil && !failure.Is(err, failure.KindNotFound) {
			return writes.Batch{}, err
		}
		if err == nil && target.AccountID == n.AccountID && target.ThreadID == thread.ID {
			r.MessageID, r.TargetProviderID = target.ID, target.ProviderMessageID
			current, err := tx.Reactions(ctx, n.AccountID, []string{target.ID})
			if err != nil {
				return writes.Batch{}, err
			}
			if reactionOf(current[target.ID], r.Reactor) == r.Emoji {
				// A repeated report (providers retry their webhooks)
				// changes nothing and records no event.
				out = r
				return b, nil
			}
			b.MessageReactions = append(b.MessageReactions, r)
		} else if in.TargetMessageID != "" {
			return writes.Batch{}, failure.NotFound("message")
		}
		b.Events = append(b.Events, s.reactionEvent(r, thread))
		if in.Chat != nil {
			b.Contacts = append(b.Contacts, writes.ContactWrite{Chat: in.Chat})
		}
		out = r
		return b, nil
	}
	err := s.store.Decide(ctx, decide)
	if errors.Is(err, writes.ErrThreadExists) {
		err = s.store.Decide(ctx, decide)
	}
	return out, err
}

// reactionOf is the emoji reactor has on a message among its current
// reactions, empty for none.
func reactionOf(current []messaging.Reaction, reactor string) string {
	for _, r := range current {
		if r.Reactor == reactor {
			return r.Emoji
		}
	}
	return ""
}

// withReactions fills the Reactions of msgs, messages of the account.
func (s *Service) withReactions(ctx context.Context, r Repos, accountID string, msgs []messaging.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	byMessage, err := r.Reactions(ctx, accountID, ids)
	if err != nil {
		return err
	}
	for i := range msgs {
		msgs[i].Reactions = byMessage[msgs[i].ID]
	}
	return nil
}

// replyTarget is what a send's reply_to names: a message of the thread t
// of the account. Empty id: no reply.
//
// Errors: NotFound for a message that is not the account's; Invalid
// (naming field) for a message of another thread.
func (s *Service) replyTarget(ctx context.Context, r TxReads, t messaging.Thread, id string, field []any) (messaging.Reply, error) {
	if id == "" {
		return messaging.Reply{}, nil
	}
	if !ident.Valid(ident.Message, id) {
		return messaging.Reply{}, failure.NotFound("message")
	}
	m, err := r.Message(ctx, t.AccountID, id)
	if err != nil {
		return messaging.Reply{}, err
	}
	if m.ThreadID != t.ID {
		return messaging.Reply{}, messaging.ErrReplyToOtherThread(field...)
	}
	return messaging.Reply{MessageID: m.ID, ProviderMessageID: m.ProviderMessageID, Text: quoted(m.Content.Summary())}, nil
}

// quoted is text cut to the length a reply keeps of it.
func quoted(text string) string {
	if utf8.RuneCountInString(text) <= messaging.MaxQuotedTextLength {
		return text
	}
	return string([]rune(text)[:messaging.MaxQuotedTextLength])
}

// inboundReply resolves what an inbound message quotes: the provider's id
// becomes Switchboard's when the message is the account's, and the quoted
// text is the stored message's when the provider sends none.
func inboundReply(ctx context.Context, tx TxReads, accountID string, service account.Service, in messaging.Reply) (messaging.Reply, error) {
	out := messaging.Reply{ProviderMessageID: in.ProviderMessageID, Text: quoted(in.Text)}
	var (
		m   messaging.Message
		err error
	)
	switch {
	case in.MessageID != "" && ident.Valid(ident.Message, in.MessageID):
		m, err = tx.Message(ctx, accountID, in.MessageID)
	case in.MessageID != "":
		err = failure.NotFound("message")
	case in.ProviderMessageID != "":
		m, err = tx.MessageByProviderID(ctx, service, in.ProviderMessageID)
	default:
		return messaging.Reply{}, nil
	}
	if failure.Is(err, failure.KindNotFound) || (err == nil && m.AccountID != accountID) {
		if in.MessageID != "" {
			return messaging.Reply{}, failure.NotFound("message")
		}
		return out, nil
	}
	if err != nil {
		return messaging.Reply{}, err
	}
	out.MessageID, out.ProviderMessageID = m.ID, m.ProviderMessageID
	if out.Text == "" {
		out.Text = quoted(m.Content.Summary())
	}
	return out, nil
}
