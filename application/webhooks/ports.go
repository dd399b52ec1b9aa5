package webhooks

import (
	"context"
	"time"

	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/messaging"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// Record is an endpoint as stored: the plain secrets left empty, sealed
// beside it.
type Record struct {
	Endpoint       webhook.Endpoint
	SealedSecret   []byte
	SealedPrevious []byte
}

// Repos is the storage of webhooks. It writes no event, delivery or
// answer: those are batch operations (writes.Batch, Store.Decide).
//
// Errors: a lookup returns a failure of kind NotFound for a missing row and
// for a row of another account alike; when the database is away, every
// method returns a failure of kind Unavailable. Other errors are
// infrastructure failures.
type Repos interface {
	// WebhookEndpoint reads an account's endpoint; inside a transaction
	// the endpoint stays locked until it ends, so two attempts that fail
	// at once cannot both disable it. NotFound when it has none.
	WebhookEndpoint(ctx context.Context, accountID string) (Record, error)
	// WebhookEndpoints reads the endpoints of those of the accounts that
	// have one, in one query.
	WebhookEndpoints(ctx context.Context, accountIDs []string) ([]Record, error)
	// ChangeWebhookEndpoint reads an account's endpoint (found false and
	// a zero Record when it has none), locked, and inserts or replaces it
	// with what change returns, atomically; it returns the endpoint as
	// saved. When change fails, nothing is saved and its error is
	// returned.
	ChangeWebhookEndpoint(ctx context.Context, accountID string, change func(current Record, found bool) (Record, error)) (Record, error)
	// WebhookDelivery reads a delivery with its event's payload; an empty
	// accountID reads it whatever the account (for the delivery job).
	// NotFound.
	WebhookDelivery(ctx context.Context, accountID, id string) (webhook.Delivery, error)
	// DeliveriesToSend reads, in one query, what the attempts of the
	// deliveries ids need: each delivery with its payload, its account's
	// endpoint (Found false when there is none) and whether a pending
	// delivery of the same account and thread, recorded before it, has
	// not had its first attempt finished yet. Ids that do not exist are
	// left out; the order is the store's.
	DeliveriesToSend(ctx context.Context, ids []string) ([]Sendable, error)
	// RecordWebhookAttempts logs attempts and saves their deliveries'
	// status, attempts, last status code and error, next attempt and
	// updated time (a delivery that does not exist is skipped)
	// atomically, in a transaction of its own when called outside one.
	RecordWebhookAttempts(ctx context.Context, attempts []LoggedAttempt, ds []webhook.Delivery) error
	// WebhookDeliveries lists an account's deliveries, newest first, with
	// their attempt logs, and the number matching.
	WebhookDeliveries(ctx context.Context, q DeliveryQuery) ([]webhook.Delivery, int, error)
	// EventsAfter reads an account's events recorded after the event
	// afterID (from the first when empty), oldest first. NotFound when
	// afterID is not an event of the account.
	EventsAfter(ctx context.Context, accountID, afterID string, limit int) ([]event.Event, error)
	// Message reads a message of the account (for a replay's check).
	// NotFound.
	Message(ctx context.Context, accountID, id string) (messaging.Message, error)
}

// Sendable is what one attempt of a delivery needs.
type Sendable struct {
	Delivery webhook.Delivery
	Endpoint Record
	// Found tells whether the account has an endpoint.
	Found bool
	// EarlierUntried: an earlier delivery of the thread has not had its
	// first attempt yet.
	EarlierUntried bool
}

// LoggedAttempt is one attempt of one delivery, for the log.
type LoggedAttempt struct {
	DeliveryID string
	Attempt    webhook.Attempt
}

// DeliveryQuery selects deliveries.
type DeliveryQuery struct {
	AccountID string
	// Status and EventType filter when set.
	Status        webhook.Status
	EventType     event.Type
	Limit, Offset int
}

// TxReads are the reads a decision makes inside its transaction (see
// Store.Decide); their errors are Repos'.
type TxReads interface {
	// WebhookEndpoint reads an account's endpoint, locked until the
	// decision ends. NotFound when it has none.
	WebhookEndpoint(ctx context.Context, accountID string) (Record, error)
	// WebhookDelivery reads a delivery of the account, locked until the
	// decision ends (the history pruner deletes no delivery meanwhile).
	// NotFound.
	WebhookDelivery(ctx context.Context, accountID, id string) (webhook.Delivery, error)
}

// Store gives the use cases their repositories, and runs the decisions
// that write a batch.
type Store interface {
	Repos() Repos
	// Decide runs decide in a transaction, reading through tx, and
	// writes the batch it returns in that transaction, with the batch's
	// reactions. When decide fails, nothing is written and Decide returns
	// its error. Otherwise Decide returns writes.Committer's errors.
	Decide(ctx context.Context, decide func(ctx context.Context, tx TxReads) (writes.Batch, error)) error
}

// Keyring seals the signing secrets at rest.
type Keyring interface {
	Seal(plaintext []byte, context string) []byte
	Open(sealed []byte, context string) ([]byte, error)
}

// URLChecker refuses URLs on private, loopback, link-local or metadata
// addresses when they are saved.
type URLChecker interface {
	CheckURL(ctx context.Context, raw string) error
}

// Request is one POST to an endpoint.
type Request struct {
	URL    string
	Header map[string]string
	Body   []byte
}

// Response is what the endpoint answered.
type Response struct {
	StatusCode int
	// RetryAfter is the receiver's Retry-After, zero when absent.
	RetryAfter time.Duration
	// Body is at most webhook.MaxResponseBytes of the answer.
	Body []byte
}

// Sender posts a delivery through the SSRF-safe client without following
// redirects. It returns an error when no response arrived (refused
// address, connection failure, timeout through ctx).
type Sender interface {
	Post(ctx context.Context, r Request) (Response, error)
}
