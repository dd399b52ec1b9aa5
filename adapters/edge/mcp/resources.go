package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-dev/switchboard/application/accounts"
	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// maxTranscriptMessages bounds a transcript: a thread's most recent
// messages, the older ones left to get_messages.
const maxTranscriptMessages = 1000

func (h *Handler) addResources() {
	h.server.AddResourceTemplate(&sdk.ResourceTemplate{
		Name:        "thread",
		Title:       "Conversation transcript",
		URITemplate: threadURIPrefix + "{id}",
		MIMEType:    "text/plain",
		Description: "A thread's transcript, oldest message first, one line per message: [time] sender (number): text, with media and locations in words. " +
			"The id is a thread id (thr_…) from list_threads. Subscribe to hear when a message arrives in the thread. " +
			"At most the last " + strconv.Itoa(maxTranscriptMessages) + " messages; get_messages pages through all of them.",
	}, h.readThread)
}

// threadOf reads the thread id of a resource URI.
func threadOf(uri string) (string, bool) {
	id, ok := strings.CutPrefix(uri, threadURIPrefix)
	return id, ok && id != "" && !strings.ContainsAny(id, "/?#")
}

func (h *Handler) readThread(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	p, ok := accounts.PrincipalFrom(ctx)
	threadID, isThread := threadOf(req.Params.URI)
	if !ok || !isThread {
		return nil, sdk.ResourceNotFoundError(req.Params.URI)
	}
	if err := h.ownThread(ctx, p.AccountID, threadID); err != nil {
		return nil, h.resourceError(ctx, req.Params.URI, err)
	}
	var (
		msgs   []messaging.Message
		before *appmessaging.MessageCursor
	)
	truncated := false
	for {
		pages, err := h.deps.Threads.MessagePages(ctx, p.AccountID, []string{threadID}, before, appmessaging.MaxPageSize)
		if err != nil {
			return nil, h.resourceError(ctx, req.Params.URI, err)
		}
		page := pages[threadID]
		msgs = append(msgs, page.Messages...)
		if !page.HasMore || len(page.Messages) == 0 {
			break
		}
		if len(msgs) >= maxTranscriptMessages {
			truncated = true
			break
		}
		last := page.Messages[len(page.Messages)-1]
		before = &appmessaging.MessageCursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	slices.Reverse(msgs) // pages are newest first; a transcript is oldest first
	text := messaging.Transcript(msgs)
	if truncated {
		text = "(earlier messages left out: get_messages with thread_id " + threadID + " pages through them)\n" + text
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: text}}}, nil
}

// resourceError answers a failed resource request as a protocol error:
// resources have no result to carry a business failure in. A missing
// thread and another account's thread are answered alike: resource not
// found.
func (h *Handler) resourceError(ctx context.Context, uri string, err error) error {
	if failure.Is(err, failure.KindNotFound) {
		return sdk.ResourceNotFoundError(uri)
	}
	return h.protocolError(ctx, err)
}

// protocolError is the protocol error for a failure of a request that has
// no result to carry it: its message is the failure's code and message,
// and its data the tool error a tool call would answer. A rate limit is
// a server error (-32000); every other failure an internal error.
func (h *Handler) protocolError(ctx context.Context, err error) error {
	e := h.toolErrorOf(ctx, err)
	data, _ := json.Marshal(e)
	code := int64(jsonrpc.CodeInternalError)
	if failure.Is(err, failure.KindRateLimited) {
		code = codeServerError
	}
	return &jsonrpc.Error{Code: code, Message: e.Code + ": " + e.Message, Data: data}
}

// codeServerError is JSON-RPC's first implementation-defined server
// error code.
const codeServerError = -32000

// subscribe starts telling a session when a message arrives in a thread
// of its account; another account's thread is not found. The subscription
// is stored for every replica: the one that holds the session's event
// stream sends the updates.
func (h *Handler) subscribe(ctx context.Context, req *sdk.SubscribeRequest) error {
	p, ok := accounts.PrincipalFrom(ctx)
	threadID, isThread := threadOf(req.Params.URI)
	if !ok || !isThread {
		return sdk.ResourceNotFoundError(req.Params.URI)
	}
	if err := h.ownThread(ctx, p.AccountID, threadID); err != nil {
		return h.resourceError(ctx, req.Params.URI, err)
	}
	s, ok := h.locals.of(req.Session)
	if !ok {
		return h.protocolError(ctx, errClosed)
	}
	if err := h.deps.Sessions.Subscribe(ctx, s.hash, req.Params.URI); err != nil {
		return h.resourceError(ctx, req.Params.URI, err)
	}
	return nil
}

func (h *Handler) unsubscribe(ctx context.Context, req *sdk.UnsubscribeRequest) error {
	s, ok := h.locals.of(req.Session)
	if !ok {
		return h.protocolError(ctx, errClosed)
	}
	if err := h.deps.Sessions.Unsubscribe(ctx, s.hash, req.Params.URI); err != nil {
		return h.protocolError(ctx, err)
	}
	return nil
}

// threadUpdated tells the thread's subscribers it changed.
func (h *Handler) threadUpdated(accountID, threadID string) {
	h.notifier.updated(accountID, threadURI(threadID))
}

// notifier sends resources' update notifications from a goroutine of its
// own, so that a slow client or database never holds up the live feed;
// updates of one resource that pile up meanwhile go out as one
// notification.
type notifier struct {
	send func(ctx context.Context, accountID, uri string) error
	mu   sync.Mutex
	// pending are the resources updated since the last round.
	pending map[updated]struct{}
	wake    chan struct{}
	log     *slog.Logger
}

// updated is a resource of an account.
type updated struct{ accountID, uri string }

func newNotifier(send func(ctx context.Context, accountID, uri string) error, log *slog.Logger) *notifier {
	return &notifier{send: send, pending: map[updated]struct{}{}, wake: make(chan struct{}, 1), log: log}
}

func (n *notifier) updated(accountID, uri string) {
	n.mu.Lock()
	n.pending[updated{accountID, uri}] = struct{}{}
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// run sends the pending notifications until ctx ends.
func (n *notifier) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.wake:
		}
		n.mu.Lock()
		pending := n.pending
		n.pending = map[updated]struct{}{}
		n.mu.Unlock()
		for u := range pending {
			if err := n.send(ctx, u.accountID, u.uri); err != nil && ctx.Err() == nil {
				n.log.WarnContext(ctx, "mcp: notify a resource update", "uri", u.uri, "error", err.Error())
			}
		}
	}
}
