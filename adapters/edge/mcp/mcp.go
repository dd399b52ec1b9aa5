// Package mcp is the Model Context Protocol interface of Switchboard, for
// LLM agents: tools over the messaging, email and cron use cases, and each
// thread as a resource whose content is its transcript. Handler serves
// them over Streamable HTTP; the composition root mounts it at /mcp behind
// the edge's authentication, limits and request log, so that the
// account is always the credentials' own. Proxy serves the same tools over
// standard input and output, for desktop clients, by calling a remote
// /mcp.
//
// Business failures are tool results with isError set, whose text and
// structured content carry the code and message REST answers with
// ({"status":"error","code":"conversation_not_started","message":…});
// protocol errors are kept for what the protocol itself refuses (an
// unknown tool, a malformed request).
package mcp

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/cron"
	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/application/idempotency"
	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	domaincron "github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// Messaging is what the tools need of the messaging use cases;
// *messaging.Service implements it. Every method returns a
// *failure.Error for what the caller can fix, and answers ids of other
// accounts as not found.
type Messaging interface {
	SendIndividual(ctx context.Context, in appmessaging.SendInput) (messaging.Message, error)
	SendGroup(ctx context.Context, in appmessaging.GroupSendInput) (messaging.Message, error)
	Threads(ctx context.Context, q appmessaging.ThreadQuery) ([]appmessaging.ThreadSummary, int, error)
	ManageGroup(ctx context.Context, cmd appmessaging.GroupCommand) (appmessaging.GroupResult, error)
	// History pages a thread's messages with the cursor tokens REST's
	// get-messages and GraphQL's Thread.messages hand out.
	History(ctx context.Context, q appmessaging.HistoryQuery) (appmessaging.MessagePage, error)
	// MarkRead and Typing tell a thread's user that the agent read their
	// messages or is typing.
	MarkRead(ctx context.Context, accountID, threadID string) (appmessaging.ReadResult, error)
	Typing(ctx context.Context, accountID, threadID string) (appmessaging.TypingResult, error)
	// React sets or takes back the agent number's reaction on a message.
	React(ctx context.Context, in appmessaging.ReactInput) (messaging.Reaction, error)
	// Message reads a message with its media link; Media streams the
	// media a user sent.
	Message(ctx context.Context, accountID, id string) (appmessaging.MessageDetails, error)
	Media(ctx context.Context, accountID, messageID string) (appmessaging.MediaStream, messaging.Message, error)
}

var _ Messaging = (*appmessaging.Service)(nil)

// ThreadReader reads threads and pages of their messages, as GraphQL's
// Thread.messages does; *messaging.Reader implements it. Ids of other
// accounts are absent from the results.
type ThreadReader interface {
	Threads(ctx context.Context, accountID string, ids []string) (map[string]messaging.Thread, error)
	MessagePages(ctx context.Context, accountID string, threadIDs []string, before *appmessaging.MessageCursor, limit int) (map[string]appmessaging.MessagePage, error)
}

var _ ThreadReader = (*appmessaging.Reader)(nil)

// LiveFeed hands out an account's message events as they are committed,
// on any replica; *messaging.Live implements it.
type LiveFeed interface {
	// Subscribe returns the account's message events from now on and a
	// function that ends the subscription; the channel closes when it
	// ends, also when the subscriber falls behind.
	Subscribe(ctx context.Context, accountID string) (<-chan appmessaging.LiveUpdate, func(), error)
	// Head is the log's position now: updates committed from now on have
	// a greater Seq, or are Late.
	Head(ctx context.Context) (int64, error)
}

var _ LiveFeed = (*appmessaging.Live)(nil)

// Mail is what the email tools need of the email use cases;
// *email.Service implements it. Every method returns a *failure.Error for
// what the caller can fix, and answers ids and addresses of other
// accounts as not found.
type Mail interface {
	Send(ctx context.Context, in appemail.SendInput) (email.Email, error)
	Reply(ctx context.Context, in appemail.ReplyInput) (email.Email, error)
	// Emails pages all of the account's emails, MailboxEmails those of
	// one of its addresses, newest first.
	Emails(ctx context.Context, accountID string, after *appemail.EmailCursor, limit int) ([]email.Email, bool, error)
	MailboxEmails(ctx context.Context, accountID, address string, after *appemail.EmailCursor, limit int) ([]email.Email, bool, error)
	// ThreadEmails reads an email thread, oldest first.
	ThreadEmails(ctx context.Context, accountID, threadID string) ([]email.Email, error)
	EmailWithAttachments(ctx context.Context, accountID, id string) (email.Email, error)
	// OwnMailbox is an address of the account as its mailbox.
	OwnMailbox(ctx context.Context, accountID, address string) (string, error)
}

var _ Mail = (*appemail.Service)(nil)

// CronJobs manages cron jobs; *cron.Service implements it. Ids of other
// accounts are not found.
type CronJobs interface {
	Create(ctx context.Context, accountID string, j domaincron.Job, answer *idempotency.Completion[domaincron.Job]) (domaincron.Job, error)
	List(ctx context.Context, q cron.JobQuery) ([]domaincron.Job, int, error)
	Pause(ctx context.Context, accountID, id string) (domaincron.Job, error)
	Resume(ctx context.Context, accountID, id string) (domaincron.Job, error)
	Delete(ctx context.Context, accountID, id string) error
}

var _ CronJobs = (*cron.Service)(nil)

// Authenticator checks API credentials again, as the edge's authentication
// did; *accounts.Service implements it. A refusal is a *failure.Error of
// kind Unauthenticated.
type Authenticator interface {
	Authenticate(ctx context.Context, key, secret string, keyOnly bool) (accounts.Principal, error)
}

var _ Authenticator = (*accounts.Service)(nil)

// Deps are the use cases and limits the MCP interface is built from.
type Deps struct {
	Messaging Messaging
	Threads   ThreadReader
	Live      LiveFeed
	// Email and Cron, when set, serve their tools; without them the tools
	// are not offered.
	Email Mail
	Cron  CronJobs
	// Profiles, when set, serves set_agent_profile; without it the tool
	// is not offered.
	Profiles Profiles
	// Authenticator, when set, checks the credentials of a session's
	// event stream again every CredentialRecheck while it is open, so that
	// a revoked key ends its sessions (as it ends GraphQL's sockets).
	Authenticator     Authenticator
	CredentialRecheck time.Duration
	// Idempotency keeps the answers of calls with an idempotency_key (the
	// store REST's Idempotency-Key uses); without it the key is ignored.
	Idempotency idempotency.Store
	// IdempotencyLock is how long a call holds its key before a retry may
	// take it over; 15 s when zero.
	IdempotencyLock time.Duration
	// CallTimeout is each call's deadline, as REST requests have theirs
	// (wait_for_message gets its own timeout on top); 10 s when zero.
	CallTimeout time.Duration
	// MaxWaits bounds the wait_for_message calls waiting at once in this
	// process, and MaxWaitsPerAccount those of one account, so that one
	// account cannot hold them all; 1,000 and 100 when zero.
	MaxWaits, MaxWaitsPerAccount int
	// Sessions keep the sessions where every replica sees them, so that
	// any replica serves any request of a session. Required.
	Sessions Sessions
	// SessionSweep is how often this replica asks the database which of
	// the sessions it holds ended elsewhere (deleted, revoked, expired),
	// and ends what it serves of them; 1 s when zero.
	SessionSweep time.Duration
	// LocalSessionIdle is how long this replica keeps a session no
	// request used here (it lives on in the database, and is resumed at
	// its next request); 5 minutes when zero.
	LocalSessionIdle time.Duration
	// MaxBodyBytes bounds a POST's body (413 beyond); 1 MiB when zero.
	MaxBodyBytes int64
	// AllowedOrigins are the browser origins (https://app.example.com, as
	// a browser sends them) whose requests are served; a request with
	// any other Origin header is refused 403. Requests without Origin
	// (MCP clients that are not browsers) are served.
	AllowedOrigins []string
	// AllowedHosts are the host names a request on a loopback connection
	// may carry in its Host header beside the loopback ones (a TLS proxy
	// on the same host that passes the public name on); any other is
	// refused 403.
	AllowedHosts []string
	// Version is reported to clients as the server's version.
	Version string
	Logger  *slog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Defaults of Deps.
const (
	DefaultCallTimeout        = 10 * time.Second
	DefaultIdempotencyLock    = edge.DefaultIdempotencyLock
	DefaultMaxWaits           = 1000
	DefaultMaxWaitsPerAccount = 100
	DefaultSessionSweep       = time.Second
	DefaultLocalSessionIdle   = 5 * time.Minute
	DefaultMaxBodyBytes       = 1 << 20
	// DefaultCredentialRecheck, with the accounts' revocation watcher
	// (which looks twice a second), ends a revoked key's sessions within
	// a second.
	DefaultCredentialRecheck = 500 * time.Millisecond
)

// MaxWaitSeconds is the longest wait_for_message may wait.
const MaxWaitSeconds = 60

// Handler serves MCP over Streamable HTTP. It expects each request's
// context to carry the accounts.Principal the authentication in front of
// it found and the ratelimit.Quota it spent (a request without a quota is
// admitted).
type Handler struct {
	deps     Deps
	server   *sdk.Server
	calls    *calls
	locals   *locals
	feed     *feed
	notifier *notifier
	log      *slog.Logger
	now      func() time.Time
	// keys is the idempotency-key protocol over Deps.Idempotency.
	keys *edge.Idempotency

	// stopNotifier and notifierDone end the notifier's and the sweep's
	// goroutines.
	stopNotifier context.CancelFunc
	notifierDone chan struct{}
	closeOnce    sync.Once
}

// NewHandler builds the MCP server and its HTTP transport; Close ends its
// sessions and waits.
func NewHandler(d Deps) (*Handler, error) {
	if d.Messaging == nil || d.Threads == nil || d.Live == nil || d.Sessions == nil {
		return nil, errors.New("mcp: Messaging, Threads, Live and Sessions are required")
	}
	d.CallTimeout = positiveOr(d.CallTimeout, DefaultCallTimeout)
	d.IdempotencyLock = positiveOr(d.IdempotencyLock, DefaultIdempotencyLock)
	d.MaxWaits = positiveOr(d.MaxWaits, DefaultMaxWaits)
	d.MaxWaitsPerAccount = positiveOr(d.MaxWaitsPerAccount, DefaultMaxWaitsPerAccount)
	d.SessionSweep = positiveOr(d.SessionSweep, DefaultSessionSweep)
	d.LocalSessionIdle = positiveOr(d.LocalSessionIdle, DefaultLocalSessionIdle)
	d.CredentialRecheck = positiveOr(d.CredentialRecheck, DefaultCredentialRecheck)
	d.MaxBodyBytes = positiveOr(d.MaxBodyBytes, DefaultMaxBodyBytes)
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	h := &Handler{deps: d, calls: newCalls(), log: d.Logger, now: d.Now}
	if d.Idempotency != nil {
		h.keys = edge.NewIdempotency(d.Idempotency, d.IdempotencyLock, d.Now, d.Logger)
	}
	h.server = sdk.NewServer(&sdk.Implementation{Name: "switchboard", Title: "Switchboard", Version: d.Version}, &sdk.ServerOptions{
		Instructions:       instructions,
		Logger:             slog.New(atLeast{inner: d.Logger.Handler(), min: slog.LevelWarn}),
		SubscribeHandler:   h.subscribe,
		UnsubscribeHandler: h.unsubscribe,
		// No logging capability: the server sends no log messages.
		Capabilities: &sdk.ServerCapabilities{},
		SetCacheable: privateReads,
	})
	h.server.AddReceivingMiddleware(h.scope)
	if err := h.addTools(); err != nil {
		return nil, err
	}
	h.addResources()
	h.locals = newLocals(h.server)
	h.notifier = newNotifier(h.notifyUpdated, d.Logger)
	h.feed = newFeed(d.Live, d.MaxWaits, d.MaxWaitsPerAccount, h.threadUpdated, d.Logger)
	ctx, cancel := context.WithCancel(context.Background())
	h.stopNotifier, h.notifierDone = cancel, make(chan struct{})
	go func() {
		defer close(h.notifierDone)
		var wg sync.WaitGroup
		wg.Go(func() { h.sweep(ctx, d.SessionSweep, d.LocalSessionIdle) })
		h.notifier.run(ctx)
		wg.Wait()
	}()
	return h, nil
}

// privateReads marks every resources/read result private and stale at
// once: a resource is a thread of the account, which no shared cache may
// keep or serve to anyone else, and which changes with each message. The
// list results keep the SDK's public scope: the tools and the resource
// template are the same for every account.
func privateReads(_ context.Context, req sdk.Request, c *sdk.Cacheable) {
	if _, read := req.(*sdk.ReadResourceRequest); read {
		c.CacheScope, c.TTLMs = "private", 0
	}
}

// instructions tell the model how the tools fit together.
const instructions = `Switchboard sends and receives WhatsApp and Telegram messages, email and scheduled HTTP calls for one account: the account of the API key this connection uses.
Messages: a user must write to an agent number before the agent may write to them (conversation_not_started otherwise); list_threads shows the conversations, get_messages pages through one (newest first), and the resource switchboard://threads/{id} is a thread's whole transcript (subscribe to it to hear of new messages).
Email: list_emails lists the account's emails (received and sent, by mailbox or email thread), get_email reads one whole, reply_email answers one in its thread; send_email sends.
wait_for_message waits up to timeout_seconds (1-60) for the next inbound message (kind email: the next received email; kind any: either) and returns it, or {"timed_out": true}; call it again to keep listening.
Errors come back as tool results with isError and {"status":"error","code":…,"message":…}; the code says what to fix.`

// Close ends what this replica serves of every session (their event
// streams and calls in flight; the sessions themselves live on in the
// database, for the other replicas) and the live feed; the HTTP server's
// shutdown then has no open stream to wait for.
func (h *Handler) Close() {
	h.closeOnce.Do(func() {
		// The waits first: closing a session waits for its calls in
		// flight, and a wait would otherwise last until its timeout. The
		// sessions end here only: they go on on the other replicas.
		h.feed.close()
		h.locals.close()
		h.stopNotifier()
		<-h.notifierDone
	})
}

func positiveOr[T int | int64 | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// atLeast passes on the records of a level or above: the SDK logs every
// subscription and notification at info, which would drown the request
// log.
type atLeast struct {
	inner slog.Handler
	min   slog.Level
}

func (a atLeast) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= a.min && a.inner.Enabled(ctx, l)
}

func (a atLeast) Handle(ctx context.Context, r slog.Record) error { return a.inner.Handle(ctx, r) }

func (a atLeast) WithAttrs(attrs []slog.Attr) slog.Handler {
	return atLeast{inner: a.inner.WithAttrs(attrs), min: a.min}
}

func (a atLeast) WithGroup(name string) slog.Handler {
	return atLeast{inner: a.inner.WithGroup(name), min: a.min}
}

// threadURI is a thread's resource address.
func threadURI(threadID string) string { return threadURIPrefix + threadID }

const threadURIPrefix = "switchboard://threads/"

// errClosed is why calls end while the server stops.
var errClosed = errors.New("the MCP server is shutting down")
