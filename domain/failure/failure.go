// Package failure holds the typed errors every layer speaks. The domain and the
// use cases say what went wrong (a Kind and a stable snake_case Code); the
// adapters decide what that means on their wire (one table in adapters/edge/rest
// turns a Kind into an HTTP status and a body shape).
package failure

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Kind classifies an error by what the caller can do about it.
type Kind int

// The kinds, in the order the REST error table lists them.
const (
	// KindInternal is a bug or an infrastructure failure; its message is never shown.
	KindInternal Kind = iota
	// KindInvalid means the input breaks a rule; Fields says which.
	KindInvalid
	// KindUnauthenticated means credentials are missing or wrong.
	KindUnauthenticated
	// KindForbidden means the caller is known but may not do this.
	KindForbidden
	// KindNotFound means the resource does not exist for this caller.
	KindNotFound
	// KindConflict means the request clashes with the current state.
	KindConflict
	// KindTooLarge means the request or a referenced file is over a size limit.
	KindTooLarge
	// KindUnsupportedMediaType means the request body is not in an accepted format.
	KindUnsupportedMediaType
	// KindRateLimited means the caller must slow down; RetryAfter says for how long.
	KindRateLimited
	// KindNotImplemented means the feature exists but not for this provider or setting.
	KindNotImplemented
	// KindUnavailable means a dependency is down; retrying later may work.
	KindUnavailable
	// KindBadGateway means a provider answered what Switchboard cannot
	// pass on (an error, or a file over its size limit).
	KindBadGateway
)

// String names the kind for logs.
func (k Kind) String() string {
	switch k {
	case KindInvalid:
		return "invalid"
	case KindUnauthenticated:
		return "unauthenticated"
	case KindForbidden:
		return "forbidden"
	case KindNotFound:
		return "not_found"
	case KindConflict:
		return "conflict"
	case KindTooLarge:
		return "too_large"
	case KindUnsupportedMediaType:
		return "unsupported_media_type"
	case KindRateLimited:
		return "rate_limited"
	case KindNotImplemented:
		return "not_implemented"
	case KindUnavailable:
		return "unavailable"
	case KindBadGateway:
		return "bad_gateway"
	default:
		return "internal"
	}
}

// FieldError is one broken rule of one input field. Path names the field
// inside its source ("to", "participants", 2); In names the source ("body",
// "path", "query", "header"), "body" when empty.
type FieldError struct {
	In      string
	Path    []any
	Message string
	// Type is a machine-readable rule name in the style of pydantic
	// ("missing", "string_type", "value_error", ...), which existing clients parse.
	Type string
}

// Error is the one error type that crosses layer boundaries.
type Error struct {
	Kind    Kind
	Code    string
	Message string
	Fields  []FieldError
	// RetryAfter is set on KindRateLimited (and may be on KindUnavailable).
	RetryAfter time.Duration
	// Details are facts a client may act on, by snake_case name
	// (window_closed_at), shown beside Code on every transport.
	Details map[string]string
	// Err is the underlying cause, kept for logs and errors.Is; never shown to clients.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return e.Code + ": " + e.Message
}

// Unwrap exposes the cause to errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Err }

// As returns the *Error in err's chain, or, for an error that carries none,
// an unavailable error when a deadline passed or the request was cancelled
// (the work may succeed when retried) and an internal error wrapping err
// otherwise.
func As(err error) *Error {
	var fe *Error
	if errors.As(err, &fe) {
		return fe
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Kind: KindUnavailable, Code: "unavailable", Message: "the request ran out of time; retry later",
			RetryAfter: time.Second, Err: err}
	case errors.Is(err, context.Canceled):
		// The caller went away or the server is stopping: nobody may read
		// the answer, and it is no bug of the server's.
		return &Error{Kind: KindUnavailable, Code: "unavailable", Message: "the request was cancelled; retry later",
			RetryAfter: time.Second, Err: err}
	}
	return &Error{Kind: KindInternal, Code: "internal_error", Message: "internal server error", Err: err}
}

// Is reports whether err carries the given kind.
func Is(err error, kind Kind) bool {
	if err == nil {
		return false // without errors.As, whose target would be allocated
	}
	var fe *Error
	return errors.As(err, &fe) && fe.Kind == kind
}

// NotFound says that the named thing does not exist for the caller. The same
// error is returned for things that belong to another account, so that ids
// cannot be probed across accounts.
func NotFound(what string) *Error {
	return &Error{Kind: KindNotFound, Code: "not_found", Message: what + " not found"}
}

// Conflict reports a clash with existing state.
func Conflict(code, message string) *Error {
	return &Error{Kind: KindConflict, Code: code, Message: message}
}

// Forbidden reports an action the caller may not take.
func Forbidden(code, message string) *Error {
	return &Error{Kind: KindForbidden, Code: code, Message: message}
}

// Unauthenticated reports missing or wrong credentials. The message never says
// which half was wrong.
func Unauthenticated() *Error {
	return &Error{Kind: KindUnauthenticated, Code: "unauthorized", Message: "missing or invalid API credentials"}
}

// RateLimited asks the caller to wait.
func RateLimited(message string, retryAfter time.Duration) *Error {
	return &Error{Kind: KindRateLimited, Code: "rate_limited", Message: message, RetryAfter: retryAfter}
}

// Unavailable reports a dependency that is down or out of time; retrying
// later may work. Callers set RetryAfter when they know how long to wait.
func Unavailable(message string, cause error) *Error {
	return &Error{Kind: KindUnavailable, Code: "unavailable", Message: message, Err: cause}
}

// Invalid builds a validation error from field errors.
func Invalid(fields ...FieldError) *Error {
	msg := "invalid request"
	if len(fields) > 0 {
		msg = fields[0].Message
	}
	return &Error{Kind: KindInvalid, Code: "validation_error", Message: msg, Fields: fields}
}

// Field builds a FieldError for a body field; path elements are field names
// or list indexes.
func Field(typ, message string, path ...any) FieldError {
	return FieldError{In: "body", Path: path, Message: message, Type: typ}
}

// Problems collects field errors while a use case checks its input, so that one
// response names every broken rule instead of the first.
type Problems []FieldError

// Add records one broken rule.
//
// The path is copied, so that a check's path arguments, passed on every
// call, stay on its caller's stack when nothing is recorded.
func (p *Problems) Add(typ, message string, path ...any) {
	*p = append(*p, Field(typ, message, slices.Clone(path)...))
}

// Err returns nil when nothing was recorded, else the validation error.
func (p Problems) Err() error {
	if len(p) == 0 {
		return nil
	}
	return Invalid(p...)
}
