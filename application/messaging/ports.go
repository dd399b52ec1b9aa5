package messaging

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// Deliverable is what delivering a message needs: the message, its
// thread's type, and the number it is sent from (NumberFound false when
// no number has that address any more).
type Deliverable struct {
	Message     messaging.Message
	ThreadType  messaging.ThreadType
	Number      account.Number
	NumberFound bool
}

// TxReads are the reads a decision makes inside its transaction (see
// Store.Decide). They see the transaction's snapshot.
//
// Errors: a lookup returns a failure of kind NotFound for a missing row and
// for a row of another account alike; when the database is away, every
// method returns a failure of kind Unavailable. Other errors are
// infrastructure failures.
type TxReads interface {
	// NumberByAddress finds an agent number by service and E.164 number,
	// whichever account owns it. NotFound when none has it.
	NumberByAddress(ctx context.Context, service account.Service, number string) (account.Number, error)
	// IndividualThread finds the thread of an agent number and a user.
	// NotFound when they have none.
	IndividualThread(ctx context.Context, accountID string, service account.Service, agentNumber, contact string) (messaging.Thread, error)
	// Thread reads a thread of the account. NotFound.
	Thread(ctx context.Context, accountID, id string) (messaging.Thread, error)
	// Participants lists a thread's participants (none for a thread that
	// does not exist).
	Participants(ctx context.Context, threadID string) ([]messaging.Participant, error)
	// MessageByProviderID finds the message a provider knows by its id.
	// NotFound.
	MessageByProviderID(ctx context.Context, service account.Service, providerID string) (messaging.Message, error)
	// Message reads a message of the account. NotFound.
	Message(ctx context.Context, accountID, id string) (messaging.Message, error)
	// MessageForUpdate reads a message of the account, as Message. Inside
	// a decision it locks the message's row until the decision ends:
	// changes of one message are decided one after another, each seeing
	// the one before. NotFound.
	MessageForUpdate(ctx context.Context, accountID, id string) (messaging.Message, error)
	// Group reads a group thread of an account with its members. NotFound,
	// for an individual thread too. Inside a decision it locks the
	// group's row until the decision ends: changes of one group are
	// decided one after another.
	Group(ctx context.Context, accountID, threadID string) (messaging.GroupState, error)
	// GroupByInviteCode finds a group of the account by its invite code.
	// NotFound.
	GroupByInviteCode(ctx context.Context, accountID, code string) (messaging.GroupState, error)
	// Reactions returns the current reactions on the account's messages
	// ids (reactions taken back left out), by message id, oldest first;
	// ids of other accounts have none.
	Reactions(ctx context.Context, accountID string, messageIDs []string) (map[string][]messaging.Reaction, error)
	// Contact reads a contact of the account. NotFound.
	Contact(ctx context.Context, accountID, id string) (messaging.Contact, error)
	// ContactByIdentity finds the account's contact with the identity's
	// WhatsApp user id, Telegram user id or phone number. NotFound.
	ContactByIdentity(ctx context.Context, accountID string, id messaging.Identity) (messaging.Contact, error)
}

// Repos is the storage of conversations, read outside a transaction. It
// writes nothing: writes go through a writes.Committer or Store.Decide.
//
// Errors: those of TxReads.
type Repos interface {
	TxReads
	// NumberByID reads an agent number of any account. NotFound.
	NumberByID(ctx context.Context, id string) (account.Number, error)
	// Threads lists an account's threads, most recently active first,
	// optionally those a phone number takes part in, with the number
	// matching.
	Threads(ctx context.Context, q ThreadQuery) ([]ThreadSummary, int, error)

	// Contacts lists an account's contacts, newest first (see
	// ContactQuery).
	Contacts(ctx context.Context, q ContactQuery) ([]messaging.Contact, error)
	// ContactThreads lists the threads of an account's contact, most
	// recently active first (none for another account's contact).
	ContactThreads(ctx context.Context, accountID, contactID string) ([]messaging.Thread, error)

	// MessageByID reads a message without account scoping, for delivery.
	// NotFound.
	MessageByID(ctx context.Context, id string) (messaging.Message, error)
	// MessageDetails reads a message of the account, its thread and the
	// thread's participants. NotFound.
	MessageDetails(ctx context.Context, accountID, id string) (MessageDetails, error)
	// RecentMessages returns the newest messages of a thread of the
	// account (none for another account's thread).
	RecentMessages(ctx context.Context, accountID, threadID string, limit int) ([]messaging.Message, error)
	// ThreadMessages returns up to limit messages of a thread of the
	// account, newest first (by creation time, then id), only those older
	// than before when it is set; none for another account's thread. A
	// page is one step along an index from the position before names, so
	// its cost does not grow with how far back the position is.
	ThreadMessages(ctx context.Context, accountID, threadID string, before *MessageCursor, limit int) ([]messaging.Message, error)
	// Templates lists an account's message templates (see TemplateQuery),
	// by agent number, name and language.
	Templates(ctx context.Context, q TemplateQuery) ([]messaging.Template, error)
	// AccountNumbers lists an account's agent numbers.
	AccountNumbers(ctx context.Context, accountID string) ([]account.Number, error)

	// MessagesToDeliver reads, in one query, what the deliveries of the
	// messages ids need (Deliverable); ids that do not exist, or whose
	// thread does not, are left out; the order is the store's.
	MessagesToDeliver(ctx context.Context, ids []string) ([]Deliverable, error)
}

// ThreadQuery selects threads.
type ThreadQuery struct {
	AccountID string
	// Phone, when set, keeps threads whose agent number, user or a
	// participant is this address.
	Phone         string
	Limit, Offset int
}

// TemplateQuery selects an account's message templates: those of the
// agent number NumberID when it is set, and with exactly the Name,
// Language and Status that are set.
type TemplateQuery struct {
	AccountID string
	NumberID  string
	Name      string
	Language  string
	Status    string
}

// ContactQuery selects contacts: up to Limit of the account's, newest
// first, only those older than Before (a contact id) when it is set,
// only those whose name, phone numbers, user ids or usernames contain
// Search (case-insensitively) when it is set.
type ContactQuery struct {
	AccountID string
	Search    string
	Before    string
	Limit     int
}

// ThreadSummary is a thread for listings.
type ThreadSummary struct {
	Thread       messaging.Thread
	Participants []messaging.Participant
	// LastMessage is nil for a thread without messages.
	LastMessage *messaging.Message
}

// Store gives the use cases their reads, and runs the decisions that must
// read inside a transaction.
type Store interface {
	Repos() Repos
	// Decide runs decide in a transaction, reading through tx, and writes
	// the batch it returns in that transaction, with the batch's
	// reactions. When decide fails, nothing is written and Decide returns
	// its error. Otherwise Decide returns writes.Committer's errors.
	Decide(ctx context.Context, decide func(ctx context.Context, tx TxReads) (writes.Batch, error)) error
}

// Outbound is a message handed to a channel provider.
type Outbound struct {
	MessageID string
	Number    account.Number
	// Settings are the number's opened provider settings.
	Settings  map[string]string
	ThreadTyp messaging.ThreadType
	// To is the user, or the group's provider address.
	To      string
	Content messaging.Content
	// ReplyTo, when it names a message, is the message this one answers,
	// with the provider's id for it.
	ReplyTo messaging.Reply
}

// Receipt is what a provider says about an accepted message.
type Receipt struct {
	ProviderMessageID string
	// Status is sent, or delivered when the provider knows at once.
	Status messaging.Status
}

// Provider sends messages on one channel implementation. It returns a
// *ProviderError for failures the provider explained.
type Provider interface {
	Send(ctx context.Context, m Outbound) (Receipt, error)
	// Capabilities says what the provider can send, so that a send it
	// cannot deliver is refused when it is made, not failed later.
	Capabilities() Capabilities
}

// Capabilities are what a provider can do.
type Capabilities struct {
	// Kinds are the content kinds it sends.
	Kinds []messaging.Kind
	// Groups tells whether it sends into groups.
	Groups bool
	// Buttons tells whether it sends reply buttons with a text message
	// (within the thread's service's messaging.ButtonRulesOf).
	Buttons bool
}

// TemplateProvider is what a provider implements when its platform has
// message templates (WhatsApp's): the templates of an agent number, and
// their sends. It returns a *ProviderError for failures the provider
// explained.
type TemplateProvider interface {
	// Templates lists all the templates the provider has for the agent
	// number now, whatever their status.
	Templates(ctx context.Context, n account.Number, settings map[string]string) ([]messaging.Template, error)
	// SendTemplate delivers a template message (Outbound.Content.Template,
	// checked against the template when it was sent).
	SendTemplate(ctx context.Context, m Outbound) (Receipt, error)
}

// Windowed is what a provider implements when its platform accepts
// free-form messages to a user only for a while after the user's last
// message (the WhatsApp Cloud API's 24-hour customer service window);
// template messages may be sent at any time.
type Windowed interface {
	// ServiceWindow is how long after the provider's time of a user's
	// message free-form messages to them are accepted.
	ServiceWindow() time.Duration
}

// Sends reports whether the provider sends content of kind k.
func (c Capabilities) Sends(k messaging.Kind) bool {
	for _, have := range c.Kinds {
		if have == k {
			return true
		}
	}
	return false
}

// Providers finds the provider behind an agent number.
type Providers interface {
	Provider(name account.Provider) (Provider, bool)
}

// ProviderError is a failure a provider explained.
type ProviderError struct {
	// Code is stored on the failed message ("recipient_unreachable",
	// "re_engagement_required", ...).
	Code    string
	Message string
	// Permanent failures are not retried.
	Permanent bool
	// RetryAfter, when set, is when the provider allows the next try.
	RetryAfter time.Duration
}

func (e *ProviderError) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// MediaProbe fetches a customer's media URL through the SSRF-safe client,
// reading at most maxBytes, and says what it is.
type MediaProbe interface {
	Probe(ctx context.Context, rawURL string, maxBytes int64) (MediaInfo, error)
}

// MediaInfo describes a fetched file.
type MediaInfo struct {
	ContentType string
	Size        int64
}

// ErrMediaTooLarge is returned by MediaProbe when the declared length or
// the bytes read exceed the limit.
var ErrMediaTooLarge = fmt.Errorf("media file is larger than the limit")

// URLChecker refuses URLs on private, loopback or link-local addresses at
// request time.
type URLChecker interface {
	CheckURL(ctx context.Context, raw string) error
}

// Opener opens a number's sealed provider settings.
type Opener interface {
	NumberSettings(n account.Number) (map[string]string, error)
}

// ProviderSet maps provider names to providers.
type ProviderSet map[account.Provider]Provider

// Provider finds one provider.
func (s ProviderSet) Provider(name account.Provider) (Provider, bool) {
	p, ok := s[name]
	return p, ok
}

// GroupChange is a group action handed to the provider behind the agent
// number, before it is stored.
type GroupChange struct {
	Number   account.Number
	Settings map[string]string
	Action   messaging.GroupAction
	// Group is the state after the change (for create, the new group).
	Group messaging.GroupState
	// Participants are the addresses the action names, if any.
	Participants []string
	// JoinApprovalMode is how a new group lets people in (create), where
	// the provider asks; JoinRequests are the requests an approval or a
	// rejection names.
	JoinApprovalMode messaging.JoinApprovalMode
	JoinRequests     []string
}

// GroupProvider is what a provider implements when its platform lets an
// agent manage groups. A provider without it answers every action with
// 501 not_supported_by_provider; one that cannot do a particular action
// returns ErrNotSupported.
type GroupProvider interface {
	ApplyGroupChange(ctx context.Context, c GroupChange) error
}

// Batched reads what delivering a message needs, many times a second: the
// store's implementation (store.Batched) serves the reads waiting at one
// moment with one statement; without one, each read is its own (inline).
type Batched interface {
	// Deliverable reads the message messageID with what its delivery
	// needs (see Repos.MessagesToDeliver); NotFound when the message or
	// its thread is gone.
	Deliverable(ctx context.Context, messageID string) (Deliverable, error)
}

// inline is Batched over the repositories, one statement per read.
type inline struct{ store Store }

func (i inline) Deliverable(ctx context.Context, messageID string) (Deliverable, error) {
	found, err := i.store.Repos().MessagesToDeliver(ctx, []string{messageID})
	if err != nil {
		return Deliverable{}, err
	}
	if len(found) == 0 {
		return Deliverable{}, failure.NotFound("message")
	}
	return found[0], nil
}
