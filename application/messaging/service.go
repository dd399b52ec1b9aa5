// Package messaging holds the conversation use cases: sending to a user or
// a group (stored and queued in one transaction, delivered by a job),
// receiving inbound messages, and reading messages and threads.
package messaging

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/jobs"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// DeliverKind is the job kind that hands a queued message to its provider.
const DeliverKind = "message.deliver"

// DeliveryAttempts bounds delivery tries; with the back-off below a
// message is retried for about half an hour before it is marked failed.
const DeliveryAttempts = 12

// DeliveryBackoff times delivery retries: 1 s doubling, at most 5 minutes.
var DeliveryBackoff = jobs.ExponentialBackoff(time.Second, 5*time.Minute)

// Service runs the messaging use cases.
type Service struct {
	store     Store
	committer writes.Committer
	providers Providers
	opener    Opener
	urls      URLChecker
	media     MediaProbe
	now       func() time.Time
	log       *slog.Logger
	// recipients resolves Telegram recipients; nil keeps them as given.
	recipients RecipientResolver
	// batched reads what deliveries need.
	batched Batched
	// throttle spaces typing calls; nil calls the provider every time.
	throttle Throttle
	// emoji checks the agent's reactions; nil refuses every reaction.
	emoji EmojiCheck
	// characters counts the user-perceived characters of a button title.
	characters func(string) int
	// links signs the media links of messages; nil leaves them out.
	links *MediaLinks
}

// Deps are what the messaging use cases are built from.
type Deps struct {
	Store Store
	// Committer writes what sends and deliveries decide.
	Committer writes.Committer
	// Batched, when set, reads what deliveries need, batched; else each
	// read is a statement of Store's.
	Batched   Batched
	Providers Providers
	Opener    Opener
	URLs      URLChecker
	Media     MediaProbe
	Now       func() time.Time
	Logger    *slog.Logger
	// Recipients, when set, resolves the recipient of individual sends.
	Recipients RecipientResolver
	// Throttle, when set, lets each thread have one typing call per
	// provider typing window; without it every typing call reaches the
	// provider.
	Throttle Throttle
	// Emoji checks that the agent's reactions are one emoji each; without
	// it every reaction is refused.
	Emoji EmojiCheck
	// Graphemes counts the characters of button titles as users see them;
	// without it a title's characters are its code points.
	Graphemes Graphemes
	// MediaLinks, when set, signs the links that open the media users
	// sent, in reads and event payloads.
	MediaLinks *MediaLinks
}

// NewService builds the messaging use cases.
func NewService(d Deps) *Service {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	clock := d.Now
	// Times are kept to the microsecond, as both databases store them, so
	// what a send returns is what a later read returns.
	now := func() time.Time { return clock().Truncate(time.Microsecond) }
	s := &Service{store: d.Store, committer: d.Committer, providers: d.Providers, opener: d.Opener, urls: d.URLs, media: d.Media, now: now, log: d.Logger, recipients: d.Recipients, throttle: d.Throttle, emoji: d.Emoji, links: d.MediaLinks}
	if s.characters = utf8.RuneCountInString; d.Graphemes != nil {
		s.characters = d.Graphemes.Graphemes
	}
	if s.batched = d.Batched; s.batched == nil {
		s.batched = inline{store: d.Store}
	}
	return s
}

// SendInput is an individual send.
type SendInput struct {
	AccountID string
	Service   string
	From      string
	To        string
	Content   messaging.Content
	// Fields names the request fields the content came in, for errors.
	Fields messaging.Fields
	// ReplyTo, when set, is a message of the same thread that this one
	// answers.
	ReplyTo string
	// Template, when set, makes the send a template message (Content is
	// then left empty): it is checked against the number's synced
	// template of that name and language, and sent whether or not the
	// customer service window is open. TemplateField names the request
	// field it came in (["template"]; empty for top-level arguments).
	Template      *messaging.TemplateSend
	TemplateField []any
	// Idempotency, when set, records the answer to the send under its
	// Idempotency-Key in the transaction that stores the message.
	Idempotency *idempotency.Completion[messaging.Message]
}

// GroupSendInput is a send into a group thread.
type GroupSendInput struct {
	AccountID string
	// Service is optional; when given it must be the thread's.
	Service  string
	From     string
	ThreadID string
	Content  messaging.Content
	Fields   messaging.Fields
	// ReplyTo, when set, is a message of the same group that this one
	// answers.
	ReplyTo string
	// Idempotency, when set, records the answer to the send under its
	// Idempotency-Key in the transaction that stores the message.
	Idempotency *idempotency.Completion[messaging.Message]
}

// SendIndividual stores a message to a user and queues its delivery. The
// message exists, queued, once this returns.
func (s *Service) SendIndividual(ctx context.Context, in SendInput) (messaging.Message, error) {
	var p failure.Problems
	service, ok := account.ParseService(in.Service)
	if !ok {
		p.Add("enum", "service must be one of whatsapp, telegram", "service")
	}
	if !account.ValidE164(in.From) {
		p.Add("value_error", "from must be an agent number in E.164 form, e.g. +14155550100", "from")
	}
	if ok && !messaging.ValidRecipient(service, in.To) && !ident.Valid(ident.Contact, in.To) {
		msg := "to must be a number in E.164 form, e.g. +14155550100, a WhatsApp user id, e.g. US.13491208655302741918, or a contact id"
		if service == account.Telegram {
			msg = "to must be a number in E.164 form, a Telegram chat id, an @username or a contact id"
		}
		p.Add("value_error", msg, "to")
	}
	if in.Template != nil {
		checkTemplateForm(*in.Template, in.TemplateField, ok && service != account.WhatsApp, &p)
	} else if err := s.checkContent(ctx, in.Content, in.Fields, &p); err != nil {
		return messaging.Message{}, err
	}
	if err := p.Err(); err != nil {
		return messaging.Message{}, err
	}
	number, err := s.sendingNumber(ctx, s.store.Repos(), in.AccountID, service, in.From)
	if err != nil {
		return messaging.Message{}, err
	}
	to, err := s.resolveRecipient(ctx, number, in.To)
	if err != nil {
		return messaging.Message{}, err
	}
	thread, err := s.sendableThread(ctx, in.AccountID, service, in.From, to)
	if err != nil {
		return messaging.Message{}, err
	}
	content := in.Content
	if in.Template != nil {
		// A template may be sent whether the window is open or not.
		if content, err = s.templateContent(ctx, number, *in.Template, in.TemplateField); err != nil {
			return messaging.Message{}, err
		}
	} else if err := thread.CheckWindow(s.now()); err != nil {
		return messaging.Message{}, err
	}
	reply, err := s.replyTarget(ctx, s.store.Repos(), thread, in.ReplyTo, []any{"reply_to"})
	if err != nil {
		return messaging.Message{}, err
	}
	return s.send(ctx, thread, number, to, content, reply, in.Idempotency)
}

// send commits an outbound message that passed its checks: the message,
// its thread's activity, its event, its delivery job and, with a key, the
// answer, in one commit. Individual and group sends end here.
func (s *Service) send(ctx context.Context, t messaging.Thread, n account.Number, to string, c messaging.Content, reply messaging.Reply, idem *idempotency.Completion[messaging.Message]) (messaging.Message, error) {
	m, b, err := s.queued(t, n, to, c, reply)
	if err != nil {
		return messaging.Message{}, err
	}
	b.Answers = writes.Answering(idem, m)
	if err := s.committer.Commit(ctx, b); err != nil {
		return messaging.Message{}, err
	}
	return m, nil
}

// sendableThread is the individual thread of an agent number and a user
// who has written to it, or ErrConversationNotStarted.
func (s *Service) sendableThread(ctx context.Context, accountID string, service account.Service, agentNumber, contact string) (messaging.Thread, error) {
	t, err := s.store.Repos().IndividualThread(ctx, accountID, service, agentNumber, contact)
	if err != nil && !failure.Is(err, failure.KindNotFound) {
		return messaging.Thread{}, err
	}
	var tp *messaging.Thread
	if err == nil {
		tp = &t
	}
	if err := messaging.CheckIndividualSend(tp); err != nil {
		return messaging.Thread{}, err
	}
	return t, nil
}

// SendGroup stores a message to a group and queues its delivery.
func (s *Service) SendGroup(ctx context.Context, in GroupSendInput) (messaging.Message, error) {
	var p failure.Problems
	var service account.Service
	if in.Service != "" {
		var ok bool
		if service, ok = account.ParseService(in.Service); !ok {
			p.Add("enum", "service must be one of whatsapp, telegram", "service")
		}
	}
	if !account.ValidE164(in.From) {
		p.Add("value_error", "from must be an agent number in E.164 form, e.g. +14155550100", "from")
	}
	if strings.TrimSpace(in.ThreadID) == "" {
		p.Add("missing", "Field required", "thread_id")
	}
	if err := s.checkContent(ctx, in.Content, in.Fields, &p); err != nil {
		return messaging.Message{}, err
	}
	if err := p.Err(); err != nil {
		return messaging.Message{}, err
	}
	r := s.store.Repos()
	thread, err := s.thread(ctx, r, in.AccountID, in.ThreadID)
	if err != nil {
		return messaging.Message{}, err
	}
	if thread.Type != messaging.Group {
		return messaging.Message{}, failure.Invalid(failure.Field("value_error", "thread_id names an individual thread; send to it with the individual send", "thread_id"))
	}
	if service != "" && service != thread.Service {
		return messaging.Message{}, failure.Invalid(failure.Field("value_error", "service does not match the thread's service "+string(thread.Service), "service"))
	}
	number, err := s.sendingNumber(ctx, r, in.AccountID, thread.Service, in.From)
	if err != nil {
		return messaging.Message{}, err
	}
	// A send checks the group as it is when the send is made.
	group, err := r.Group(ctx, in.AccountID, thread.ID)
	if err != nil {
		return messaging.Message{}, err
	}
	if err := group.CheckSend(in.From); err != nil {
		return messaging.Message{}, err
	}
	reply, err := s.replyTarget(ctx, r, thread, in.ReplyTo, []any{"reply_to"})
	if err != nil {
		return messaging.Message{}, err
	}
	return s.send(ctx, thread, number, "", in.Content, reply, in.Idempotency)
}

// checkContent validates content and, for media, that its URL is public.
func (s *Service) checkContent(ctx context.Context, c messaging.Content, f messaging.Fields, p *failure.Problems) error {
	if err := c.Check(f); err != nil {
		*p = append(*p, failure.As(err).Fields...)
		return nil
	}
	if c.Kind.IsMedia() && s.urls != nil {
		if err := s.urls.CheckURL(ctx, c.MediaURL); err != nil {
			p.Add("url_forbidden", "the media URL is not allowed: "+err.Error(), f.URLField()...)
		}
	}
	return nil
}

// sendingNumber is the from number, which the account must own and have
// enabled on the service.
func (s *Service) sendingNumber(ctx context.Context, r TxReads, accountID string, service account.Service, from string) (account.Number, error) {
	n, err := r.NumberByAddress(ctx, service, from)
	if failure.Is(err, failure.KindNotFound) || (err == nil && (n.AccountID != accountID || !n.Enabled)) {
		return account.Number{}, messaging.NumberNotPermitted(from, service)
	}
	return n, err
}

func (s *Service) thread(ctx context.Context, r TxReads, accountID, id string) (messaging.Thread, error) {
	if !ident.Valid(ident.Thread, id) {
		return messaging.Thread{}, failure.NotFound("thread")
	}
	return r.Thread(ctx, accountID, id)
}

// PaceKey groups deliveries that share a provider limit: one agent number
// (a WhatsApp number, a Telegram bot). It starts with the service, so the
// runner can apply that channel's limit.
func PaceKey(n account.Number) string { return string(n.Service) + ":" + n.ID }

// EndpointKey is what a delivery calls, for the runner's per-endpoint
// limit and circuit breaker: the agent number at its provider (its bot,
// its WhatsApp phone number id). The provider's API itself is shared by
// every account, so keying on it would let one number's trouble stop all
// of them; a number is one account's.
func EndpointKey(n account.Number) string { return PaceKey(n) }

// deliverPayload is the delivery job's payload.
type deliverPayload struct {
	MessageID string `json:"message_id"`
}

// queued decides an outbound message from n in t: the message, queued,
// the thread's activity, the message.sent event and the delivery job,
// paced per agent number.
func (s *Service) queued(t messaging.Thread, n account.Number, to string, c messaging.Content, reply messaging.Reply) (messaging.Message, writes.Batch, error) {
	if err := s.checkCapabilities(n, t.Type, c); err != nil {
		return messaging.Message{}, writes.Batch{}, err
	}
	now := s.now().UTC()
	m := messaging.Message{
		ID: ident.New(ident.Message), AccountID: t.AccountID, ThreadID: t.ID, Service: t.Service,
		Direction: messaging.OutboundAPI, From: n.Number, To: to, ContactID: t.ContactID, Content: c, Status: messaging.Queued, ReplyTo: reply,
		CreatedAt: now, UpdatedAt: now,
	}
	payload, err := json.Marshal(deliverPayload{MessageID: m.ID})
	if err != nil {
		return messaging.Message{}, writes.Batch{}, err
	}
	// No unique key: the message is new, so nothing can enqueue its
	// delivery twice, and Work leaves a message that is no longer queued
	// alone.
	return m, writes.Batch{
		Messages:       []messaging.Message{m},
		ThreadActivity: []writes.ThreadActivity{{ThreadID: t.ID, At: now}},
		Events:         []event.Event{s.messageEvent(event.MessageSent, m, t.Type)},
		Jobs: []jobs.EnqueueParams{{
			Kind: DeliverKind, Payload: payload, PaceKey: PaceKey(n), MaxAttempts: DeliveryAttempts,
			AccountID: t.AccountID, EndpointKey: EndpointKey(n),
		}},
	}, nil
}

// checkCapabilities refuses, at request time, what the number's provider
// cannot deliver.
func (s *Service) checkCapabilities(n account.Number, t messaging.ThreadType, c messaging.Content) error {
	k := c.Kind
	provider, ok := s.providers.Provider(n.Provider)
	if !ok {
		return &failure.Error{Kind: failure.KindNotImplemented, Code: "provider_unavailable", Message: "no provider " + string(n.Provider) + " is configured"}
	}
	caps := provider.Capabilities()
	if _, templates := provider.(TemplateProvider); k == messaging.KindTemplate && !templates {
		return &failure.Error{Kind: failure.KindNotImplemented, Code: "not_supported_by_provider",
			Message: fmt.Sprintf("the %s provider has no message templates", n.Provider)}
	}
	if !caps.Sends(k) && k != messaging.KindTemplate {
		return &failure.Error{Kind: failure.KindNotImplemented, Code: "not_supported_by_provider",
			Message: fmt.Sprintf("the %s provider cannot send %s messages", n.Provider, k)}
	}
	if t == messaging.Group && !caps.Groups {
		return &failure.Error{Kind: failure.KindNotImplemented, Code: "not_supported_by_provider",
			Message: fmt.Sprintf("the %s provider cannot send to groups", n.Provider)}
	}
	if len(c.Buttons) == 0 {
		return nil
	}
	if !caps.Buttons {
		return &failure.Error{Kind: failure.KindNotImplemented, Code: "not_supported_by_provider",
			Message: fmt.Sprintf("the %s provider cannot send reply buttons", n.Provider)}
	}
	return messaging.CheckButtons(n.Service, c, s.characters)
}

// Work delivers one queued message: the delivery job's handler. It is
// idempotent: a message that is no longer queued is left alone.
func (s *Service) Work(ctx context.Context, job jobs.Job) error {
	var p deliverPayload
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		return jobs.Permanent(fmt.Errorf("delivery payload: %w", err))
	}
	d, err := s.batched.Deliverable(ctx, p.MessageID)
	if failure.Is(err, failure.KindNotFound) {
		return nil // deleted with its account
	}
	if err != nil {
		return err
	}
	m := d.Message
	if m.Status != messaging.Queued {
		return nil
	}
	err = s.deliver(ctx, d)
	if err == nil {
		return nil
	}
	var pe *ProviderError
	last := job.Attempt >= job.MaxAttempts
	switch {
	case errors.As(err, &pe) && pe.Permanent:
		return s.fail(ctx, m, pe.Code, pe.Message, err)
	case last:
		code := "delivery_failed"
		if pe != nil {
			code = pe.Code
		}
		return s.fail(ctx, m, code, "gave up after "+fmt.Sprint(job.Attempt)+" attempts: "+err.Error(), err)
	case pe != nil && pe.RetryAfter > 0:
		return jobs.RetryAfter(pe.RetryAfter, jobs.EndpointDown(err))
	}
	// No answer, or the provider could not take the message now: the
	// number's endpoint counts a failure towards its circuit breaker.
	return jobs.EndpointDown(err)
}

// fail marks the message failed and stops the job.
func (s *Service) fail(ctx context.Context, m messaging.Message, code, text string, cause error) error {
	if err := s.moveStatus(ctx, m, messaging.Failed, code, text, ""); err != nil {
		return err
	}
	return jobs.Permanent(cause)
}

func (s *Service) deliver(ctx context.Context, d Deliverable) error {
	m, n := d.Message, d.Number
	if !d.NumberFound {
		return failure.NotFound("number")
	}
	if !n.Enabled || n.AccountID != m.AccountID {
		return &ProviderError{Code: "number_not_permitted", Message: "the agent number was disabled before delivery", Permanent: true}
	}
	provider, ok := s.providers.Provider(n.Provider)
	if !ok {
		return &ProviderError{Code: "provider_unavailable", Message: "no provider " + string(n.Provider) + " is configured", Permanent: true}
	}
	if m.Content.Kind.IsMedia() {
		if err := s.checkMedia(ctx, m); err != nil {
			return err
		}
	}
	settings, err := s.opener.NumberSettings(n)
	if err != nil {
		return &ProviderError{Code: "provider_settings_unreadable", Message: err.Error(), Permanent: true}
	}
	to := m.To
	if d.ThreadType == messaging.Group {
		to = m.ThreadID
	}
	reply, err := s.replyAtDelivery(ctx, m.ReplyTo)
	if err != nil {
		return err
	}
	out := Outbound{MessageID: m.ID, Number: n, Settings: settings, ThreadTyp: d.ThreadType, To: to, Content: m.Content, ReplyTo: reply}
	var receipt Receipt
	if tp, ok := provider.(TemplateProvider); ok && m.Content.Kind == messaging.KindTemplate {
		receipt, err = tp.SendTemplate(ctx, out)
	} else {
		receipt, err = provider.Send(ctx, out)
	}
	if err != nil {
		return err
	}
	status := receipt.Status
	if status != messaging.Delivered {
		status = messaging.Sent
	}
	return s.recordSent(ctx, m, status, receipt.ProviderMessageID)
}

// replyAtDelivery is what a message being delivered answers, with the
// provider's id of the quoted message as it is now (the quoted message
// may have been queued when the reply was sent). A quoted message the
// provider never had is left out: the message goes without its quote.
func (s *Service) replyAtDelivery(ctx context.Context, r messaging.Reply) (messaging.Reply, error) {
	if r.MessageID == "" || r.ProviderMessageID != "" {
		return r, nil
	}
	m, err := s.store.Repos().MessageByID(ctx, r.MessageID)
	if failure.Is(err, failure.KindNotFound) {
		return messaging.Reply{}, nil
	}
	if err != nil {
		return messaging.Reply{}, err
	}
	if m.ProviderMessageID == "" {
		return messaging.Reply{}, nil
	}
	r.ProviderMessageID = m.ProviderMessageID
	return r, nil
}

// sentRecordWaits are the pauses before each try to record that the
// provider took a message.
var sentRecordWaits = []time.Duration{0, 200 * time.Millisecond, time.Second}

// recordSent records that the provider took the message. A message left
// queued would be sent again by the job's next attempt, so the status is
// written even when the job's context ended during the provider call (its
// timeout, or its lease lost to a rescue), and a failed write is tried
// again a few times before the job is left to retry.
func (s *Service) recordSent(ctx context.Context, m messaging.Message, status messaging.Status, providerID string) error {
	ctx = context.WithoutCancel(ctx)
	var err error
	for _, wait := range sentRecordWaits {
		time.Sleep(wait)
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = s.moveStatus(wctx, m, status, "", "", providerID)
		cancel()
		if err == nil {
			return nil
		}
	}
	return fmt.Errorf("record that %s took message %s (its delivery will be tried again): %w", m.Service, m.ID, err)
}

// checkMedia fetches the media through the SSRF-safe client within its
// size limit and checks that the channel accepts its type.
func (s *Service) checkMedia(ctx context.Context, m messaging.Message) error {
	limit := messaging.MaxMediaBytes(m.Content.Kind)
	info, err := s.media.Probe(ctx, m.Content.MediaURL, limit)
	switch {
	case errors.Is(err, ErrMediaTooLarge):
		return &ProviderError{Code: "media_too_large", Message: fmt.Sprintf("%s files may be at most %d MB", m.Content.Kind, limit>>20), Permanent: true}
	case err != nil:
		var pe *ProviderError
		if errors.As(err, &pe) {
			return err
		}
		return &ProviderError{Code: "media_unreachable", Message: err.Error()}
	}
	if !messaging.AcceptsMediaType(m.Service, m.Content.Kind, info.ContentType) {
		return &ProviderError{Code: "unsupported_media_type", Message: fmt.Sprintf("%s does not accept %s as %s", m.Service, info.ContentType, m.Content.Kind), Permanent: true}
	}
	return nil
}

// statusMove decides a move of m's status: the change and its
// message.status event, or nothing when the rules do not allow the move.
func (s *Service) statusMove(m messaging.Message, to messaging.Status, code, text, providerID string) writes.Batch {
	if !messaging.CanMove(m.Status, to) {
		return writes.Batch{}
	}
	return s.statusChange(m, to, code, text, providerID, outboundThreadType(m))
}

// statusChange is a move of m's status that its caller checked: the
// change and its message.status event about m in a thread of type tt.
func (s *Service) statusChange(m messaging.Message, to messaging.Status, code, text, providerID string, tt messaging.ThreadType) writes.Batch {
	m.Status = to
	m.FailureCode, m.FailureText = code, text
	if providerID != "" {
		m.ProviderMessageID = providerID
	}
	m.UpdatedAt = s.now().UTC()
	return writes.Batch{
		Statuses: []writes.MessageStatus{{MessageID: m.ID, Status: to, FailureCode: code, FailureText: text,
			ProviderMessageID: providerID, UpdatedAt: m.UpdatedAt}},
		Events: []event.Event{s.messageEvent(event.MessageStatus, m, tt)},
	}
}

// moveStatus commits a move of m's status for the delivery job, which
// read m outside a transaction: the status and its event commit together.
func (s *Service) moveStatus(ctx context.Context, m messaging.Message, to messaging.Status, code, text, providerID string) error {
	return s.committer.Commit(ctx, s.statusMove(m, to, code, text, providerID))
}

// ApplyStatus records a status a provider reported for one of its message
// ids; unknown ids and backward moves are ignored.
func (s *Service) ApplyStatus(ctx context.Context, service account.Service, providerID string, to messaging.Status, code, text string) error {
	return s.store.Decide(ctx, func(ctx context.Context, tx TxReads) (writes.Batch, error) {
		m, err := tx.MessageByProviderID(ctx, service, providerID)
		if failure.Is(err, failure.KindNotFound) {
			return writes.Batch{}, nil
		}
		if err != nil {
			return writes.Batch{}, err
		}
		return s.statusMove(m, to, code, text, ""), nil
	})
}
