package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-dev/switchboard/adapters/edge/ratelimit"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// scope runs each request of a client as the HTTP request that carried
// it: as its principal, within the call deadline, and cancelled when its
// client goes away. A tools/call or resources/read runs only if its HTTP
// request's token was admitted (see ServeHTTP). It
// records who opened each session, and gives the SDK's refusals of
// malformed arguments the shape of every other tool error.
func (h *Handler) scope(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if strings.HasPrefix(method, "notifications/") {
			// The SDK's own business (initialized, cancelled, …): nothing
			// of the account's is read or written. A session resumed here
			// from its stored state is past initialized already.
			if method == "notifications/initialized" {
				if ss, isServer := req.GetSession().(*sdk.ServerSession); isServer {
					if s, ok := h.locals.of(ss); ok && s.resumed {
						return nil, nil
					}
				}
			}
			return next(ctx, method, req)
		}
		c, ok := h.calls.of(req)
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the HTTP request of this call ended before it was handled"}
		}
		if (method == methodCallTool || method == methodReadResource) && !c.quota.Admitted() {
			return h.rateLimited(ctx, method, c.quota)
		}
		ctx = accounts.WithPrincipal(ctx, c.principal)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(c.ctx, cancel)()
		if !isWait(method, req) {
			// wait_for_message sets its own deadline, its timeout on top
			// of this one.
			var stop context.CancelFunc
			ctx, stop = context.WithTimeout(ctx, h.deps.CallTimeout)
			defer stop()
		}
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		switch method {
		case "initialize":
			// The state is stored before the client hears of the session,
			// so that its next request may go to any replica.
			if err := h.initialized(ctx, req, res); err != nil {
				return nil, h.protocolError(ctx, err)
			}
		case "tools/call":
			if r, ok := res.(*sdk.CallToolResult); ok && r.IsError && r.StructuredContent == nil {
				res = argumentError(r)
			}
		}
		return res, nil
	}
}

// rateLimited answers a call refused for the account's rate limit: a
// tool error for a tool call, a protocol error carrying the same error
// as its data for a resource read (which has no result to carry it).
func (h *Handler) rateLimited(ctx context.Context, method string, q ratelimit.Quota) (sdk.Result, error) {
	err := failure.RateLimited("rate limit exceeded for this account", time.Duration(retryAfterSeconds(q.RetryAfter))*time.Second)
	if method == methodCallTool {
		return h.errorResult(ctx, err), nil
	}
	return nil, h.protocolError(ctx, err)
}

func isWait(method string, req sdk.Request) bool {
	if method != "tools/call" {
		return false
	}
	p, ok := req.GetParams().(*sdk.CallToolParamsRaw)
	return ok && p.Name == waitToolName
}

// toolError is the structured content (and, as JSON, the text) of a
// failed call: REST's flat error body, with the broken rules of a
// validation error by argument.
type toolError struct {
	Status  string `json:"status" jsonschema:"always error"`
	Code    string `json:"code" jsonschema:"what went wrong, as REST names it: validation_error, not_found, conversation_not_started, …"`
	Message string `json:"message" jsonschema:"what went wrong, in a sentence"`
	// Fields are the broken rules of a validation error.
	Fields []fieldError `json:"fields,omitempty" jsonschema:"the arguments that broke a rule, for validation_error"`
	// RetryAfterSeconds is how long to wait before retrying, when that
	// may help.
	RetryAfterSeconds int `json:"retry_after_seconds,omitempty" jsonschema:"seconds to wait before retrying"`
	// WindowClosedAt is when the customer service window closed, for
	// window_closed.
	WindowClosedAt string `json:"window_closed_at,omitempty" jsonschema:"for window_closed: when the conversation's customer service window closed; send a template"`
	// InviteLink is the link people join a group with, for
	// use_invite_link.
	InviteLink string `json:"invite_link,omitempty" jsonschema:"for use_invite_link: the group's invite link, to send to the people to add"`
}

type fieldError struct {
	Field   string `json:"field" jsonschema:"the argument, dotted for nested ones (media.url)"`
	Message string `json:"message"`
	Type    string `json:"type"`
}

// errorResult turns a use case's error into a failed tool result.
// Internal errors are logged and shown without their text, as REST does.
func (h *Handler) errorResult(ctx context.Context, err error) *sdk.CallToolResult {
	if stored, ok := errors.AsType[*storedError](err); ok {
		return toolErrorResult(stored.answer)
	}
	return toolErrorResult(h.toolErrorOf(ctx, err))
}

// toolErrorOf is the tool error REST's error body would say for err.
func (h *Handler) toolErrorOf(ctx context.Context, err error) toolError {
	fe := failure.As(err)
	if fe.Kind == failure.KindInternal {
		h.log.ErrorContext(ctx, "mcp call failed", "error", err.Error())
		fe = &failure.Error{Kind: failure.KindInternal, Code: "internal_error", Message: "internal server error"}
	}
	out := toolError{Status: "error", Code: fe.Code, Message: fe.Message}
	for _, f := range fe.Fields {
		out.Fields = append(out.Fields, fieldError{Field: dotted(f.Path), Message: f.Message, Type: f.Type})
	}
	if fe.RetryAfter > 0 {
		out.RetryAfterSeconds = int(math.Ceil(fe.RetryAfter.Seconds()))
	}
	out.WindowClosedAt = fe.Details[messaging.WindowClosedAtDetail]
	out.InviteLink = fe.Details[messaging.InviteLinkDetail]
	return out
}

func toolErrorResult(e toolError) *sdk.CallToolResult {
	text, _ := json.Marshal(e)
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: string(text)}}, StructuredContent: e}
}

// dotted names a field path: ["media", "url"] is media.url,
// ["participants", 2] is participants.2.
func dotted(path []any) string {
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i] = fmt.Sprint(p)
	}
	return strings.Join(parts, ".")
}

// The SDK checks arguments against the tool's input schema before the
// tool runs, and answers a failed tool result whose text is the schema
// validator's message ("validating \"arguments\": validating root:
// validating /properties/timeout_seconds: minimum: 0/1 is less than
// 1.000000"). argumentError reads the argument and the broken rule out of
// it and answers a validation_error like every other.
var (
	propertyPath     = regexp.MustCompile(`validating (/[^:\s]*):`)
	missingArguments = regexp.MustCompile(`required: missing properties: (\[.*\])`)
	extraArguments   = regexp.MustCompile(`unexpected additional properties (\[.*\])`)
	wrongType        = regexp.MustCompile(`type: .* has type "([^"]+)", want (?:one of )?"([^"]+)"`)
	belowMinimum     = regexp.MustCompile(`minimum: \S+ is less than (\S+)`)
	aboveMaximum     = regexp.MustCompile(`maximum: \S+ is greater than (\S+)`)
	notInEnum        = regexp.MustCompile(`enum: .* does not equal any of: \[(.*)\]`)
	quoted           = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
)

func argumentError(r *sdk.CallToolResult) *sdk.CallToolResult {
	var text string
	for _, c := range r.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			text = t.Text
			break
		}
	}
	detail := strings.TrimPrefix(strings.TrimPrefix(text, `validating "arguments": `), "validating root: ")
	var field string
	if m := propertyPath.FindAllStringSubmatch(detail, -1); len(m) > 0 {
		field = pointerField(m[len(m)-1][1])
	}
	var fields []fieldError
	rule := func(typ, message string) {
		fields = append(fields, fieldError{Field: field, Message: message, Type: typ})
	}
	switch {
	case missingArguments.MatchString(detail):
		for _, name := range quotedList(missingArguments.FindStringSubmatch(detail)[1]) {
			fields = append(fields, fieldError{Field: join(field, name), Message: "Field required", Type: "missing"})
		}
	case extraArguments.MatchString(detail):
		for _, name := range quotedList(extraArguments.FindStringSubmatch(detail)[1]) {
			fields = append(fields, fieldError{Field: join(field, name), Message: "is not an argument of this tool", Type: "extra_forbidden"})
		}
	case wrongType.MatchString(detail):
		m := wrongType.FindStringSubmatch(detail)
		want := strings.TrimPrefix(strings.TrimSuffix(m[2], ", null"), "null, ")
		rule(want+"_type", "must be of type "+want+", not "+m[1])
	case belowMinimum.MatchString(detail):
		rule("greater_than_equal", "must be at least "+number(belowMinimum.FindStringSubmatch(detail)[1]))
	case aboveMaximum.MatchString(detail):
		rule("less_than_equal", "must be at most "+number(aboveMaximum.FindStringSubmatch(detail)[1]))
	case notInEnum.MatchString(detail):
		rule("enum", "must be one of "+strings.Join(strings.Fields(notInEnum.FindStringSubmatch(detail)[1]), ", "))
	default:
		rule("value_error", detail)
	}
	e := toolError{Status: "error", Code: "validation_error", Fields: fields}
	if fields[0].Field != "" {
		e.Message = fields[0].Field + ": " + fields[0].Message
	} else {
		e.Message = "invalid arguments: " + fields[0].Message
	}
	return toolErrorResult(e)
}

// pointerField turns a schema location (/properties/media/properties/url)
// into the argument's name (media.url).
func pointerField(pointer string) string {
	var names []string
	parts := strings.Split(strings.Trim(pointer, "/"), "/")
	for i := 0; i < len(parts); i++ {
		if parts[i] == "properties" && i+1 < len(parts) {
			names = append(names, parts[i+1])
			i++
		}
	}
	return strings.Join(names, ".")
}

func join(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// quotedList reads a Go-quoted list of strings (["a" "b"]).
func quotedList(s string) []string {
	var out []string
	for _, q := range quoted.FindAllString(s, -1) {
		if v, err := strconv.Unquote(q); err == nil {
			out = append(out, v)
		}
	}
	return out
}

// number shows a bound without needless decimals (1.000000 is 1).
func number(s string) string {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// initialized stores the protocol state of a session whose initialize
// completed: what every replica resumes it from.
func (h *Handler) initialized(ctx context.Context, req sdk.Request, res sdk.Result) error {
	ss, _ := req.GetSession().(*sdk.ServerSession)
	s, ok := h.locals.of(ss)
	result, isResult := res.(*sdk.InitializeResult)
	if !ok || !isResult {
		return errClosed
	}
	state, err := json.Marshal(&sdk.ServerSessionState{
		InitializeParams:          ss.InitializeParams(),
		NegotiatedProtocolVersion: result.ProtocolVersion,
	})
	if err != nil {
		return err
	}
	if err := h.deps.Sessions.Initialized(ctx, s.hash, state); err != nil {
		return err
	}
	h.locals.markInitialized(s)
	return nil
}
