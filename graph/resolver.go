// Package graph is the GraphQL adapter: the schema in schema/*.graphqls, the
// executable schema gqlgen generates from it into generated/ (never edited by
// hand), and the resolvers, which only translate between GraphQL and the use
// cases. Regenerate with `go generate ./graph/...`.
package graph

import (
	"context"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/application/accounts"
	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// AccountReader reads the account a request acts as. *accounts.Service
// implements it.
type AccountReader interface {
	// Overview returns the account with the given id and what it owns. It
	// returns a *failure.Error of kind NotFound when the account does not
	// exist; any other error is an infrastructure failure.
	Overview(ctx context.Context, accountID string) (accounts.Overview, error)
}

var _ AccountReader = (*accounts.Service)(nil)

// ThreadReader is the batched reads of threads and messages;
// *messaging.Reader implements it. Every method sees only the rows of
// accountID: ids of other accounts are absent from the results.
type ThreadReader interface {
	ThreadPage(ctx context.Context, q appmessaging.ThreadPageQuery) ([]appmessaging.PagedThread, bool, error)
	Threads(ctx context.Context, accountID string, ids []string) (map[string]messaging.Thread, error)
	Participants(ctx context.Context, accountID string, threadIDs []string) (map[string][]messaging.Participant, error)
	MessagePages(ctx context.Context, accountID string, threadIDs []string, before *appmessaging.MessageCursor, limit int) (map[string]appmessaging.MessagePage, error)
	Messages(ctx context.Context, accountID string, ids []string) (map[string]messaging.Message, error)
	Timelines(ctx context.Context, accountID string, msgs []messaging.Message) (map[string][]appmessaging.StatusChange, error)
	Reactions(ctx context.Context, accountID string, ids []string) (map[string][]messaging.Reaction, error)
}

var _ ThreadReader = (*appmessaging.Reader)(nil)

// MessageSender sends messages, as REST does; *messaging.Service implements
// it. Both return *failure.Error values for everything the caller can fix.
type MessageSender interface {
	SendIndividual(ctx context.Context, in appmessaging.SendInput) (messaging.Message, error)
	SendGroup(ctx context.Context, in appmessaging.GroupSendInput) (messaging.Message, error)
	React(ctx context.Context, in appmessaging.ReactInput) (messaging.Reaction, error)
}

var _ MessageSender = (*appmessaging.Service)(nil)

// ThreadIndicator marks threads read and shows typing, as REST does;
// *messaging.Service implements it. Both return *failure.Error values for
// everything the caller can fix, and answer other accounts' threads as
// not found.
type ThreadIndicator interface {
	MarkRead(ctx context.Context, accountID, threadID string) (appmessaging.ReadResult, error)
	Typing(ctx context.Context, accountID, threadID string) (appmessaging.TypingResult, error)
}

var _ ThreadIndicator = (*appmessaging.Service)(nil)

// errNoIndicator answers markThreadRead and sendTyping on a server built
// without them.
var errNoIndicator = &failure.Error{Kind: failure.KindNotImplemented, Code: "not_implemented", Message: "read receipts and typing are not configured on this server"}

// Deps are the use cases the schema reaches.
type Deps struct {
	Accounts AccountReader
	Threads  ThreadReader
	Sender   MessageSender
	// Indicator, when set, serves markThreadRead and sendTyping; without
	// it they answer not_implemented.
	Indicator ThreadIndicator
	// Live feeds the subscriptions; without it they answer not_implemented.
	Live LiveFeed
	// Subscriptions bound the subscriptions open on this process.
	Subscriptions SubscriptionLimits
	// Requests, when set, is the account's request budget (REST's): every
	// top-level field of a mutation after the first spends one more of
	// its tokens, since each does what one REST request does; the first
	// rides on the token its request or socket operation spent.
	Requests RequestBudget
	// Cron and Webhooks serve their fields; without them those fields
	// answer not_implemented.
	Cron     CronUseCases
	Webhooks WebhookUseCases
	// Email and Queue serve the emails, the sandbox mailbox and the
	// queue's health; without them those fields answer not_implemented.
	Email EmailReader
	Queue QueueHealthReader
	// Contacts serves contacts, contact and mergeContacts; without it
	// they answer not_implemented.
	Contacts ContactBook
	// Templates serves templates and syncTemplates; without it they
	// answer not_implemented.
	Templates TemplateCatalog
	// Profiles serves setAgentProfile; without it it answers
	// not_implemented.
	Profiles ProfileSetter
	// Retention serves the account's history retention; without it its
	// fields answer not_implemented.
	Retention HistoryRetention
	// Erasure serves erasePerson; without it it answers not_implemented.
	Erasure ErasureUseCases
	// Idempotency, when set, honours the Idempotency-Key header on
	// mutations over HTTP (see keyedMutations).
	Idempotency *edge.Idempotency
}

// Resolver is the root resolver; it holds the use cases the schema reaches.
type Resolver struct {
	accounts AccountReader
	threads  ThreadReader
	sender   MessageSender
	// indicator marks threads read and shows typing.
	indicator ThreadIndicator
	hub       *liveHub
	requests  RequestBudget
	cron      CronUseCases
	webhooks  WebhookUseCases
	email     EmailReader
	queue     QueueHealthReader
	keys      *edge.Idempotency
	contacts  ContactBook
	templates TemplateCatalog
	profiles  ProfileSetter
	retention HistoryRetention
	erasure   ErasureUseCases
}

// NewResolver builds the root resolver over the use cases.
func NewResolver(d Deps) *Resolver {
	r := &Resolver{accounts: d.Accounts, threads: d.Threads, sender: d.Sender, cron: d.Cron, webhooks: d.Webhooks, email: d.Email, queue: d.Queue,
		requests: d.Requests, keys: d.Idempotency, indicator: d.Indicator, contacts: d.Contacts, templates: d.Templates, profiles: d.Profiles,
		retention: d.Retention, erasure: d.Erasure}
	if d.Live != nil {
		r.hub = newLiveHub(d.Live, d.Subscriptions)
	}
	return r
}
