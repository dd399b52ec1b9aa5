package edge

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/switchboard-dev/switchboard/domain/failure"
)

// errorStyle is the body shape of errors on a route. The interface has two:
// the messaging routes answer validation errors in FastAPI's 422 shape and
// other errors flat; the cron routes wrap every error in an "error" object.
type errorStyle int

const (
	styleMessaging errorStyle = iota
	styleCron
	// styleEmailCreate is the messaging shape, but validation errors are
	// 400 as the interface lists for email address creation.
	styleEmailCreate
	// styleA1Cron is the A1Cron routes' shape: {success: false, error,
	// code, details}, validation errors 422.
	styleA1Cron
	// styleProfileSettings is the messaging shape with the validation
	// body's sentence in message too: A1Base's template shows the
	// message of every failed profile-settings call.
	styleProfileSettings
)

// a1CronVerbs are the A1Cron operations, the third segment of their paths
// (/v1/cron-jobs/{accountId}/{verb}…).
var a1CronVerbs = map[string]bool{"list": true, "create": true, "details": true, "update": true, "delete": true, "trigger": true, "logs": true}

// styleOf picks the error shape from the path, so that even requests that
// match no route (404, 405) answer in the shape their path family uses.
func styleOf(r *http.Request) errorStyle {
	if rest, ok := strings.CutPrefix(r.URL.Path, "/v1/cron-jobs/"); ok {
		if parts := strings.SplitN(rest, "/", 3); len(parts) >= 2 && a1CronVerbs[parts[1]] {
			return styleA1Cron
		}
	}
	if strings.HasPrefix(r.URL.Path, "/v1/cron-jobs") {
		return styleCron
	}
	if strings.HasPrefix(r.URL.Path, "/v1/emails/") && strings.HasSuffix(r.URL.Path, "/create-email") {
		return styleEmailCreate
	}
	if strings.HasPrefix(r.URL.Path, "/v1/profile-settings/") {
		return styleProfileSettings
	}
	return styleMessaging
}

// statusRow is one line of the error table.
type statusRow struct {
	status int
	// cronStatus differs from status only for validation errors, which the
	// cron routes report as 400 and the messaging routes as 422.
	cronStatus int
}

// errorTable is the one place that turns a domain failure into an HTTP
// status. Handlers never choose status codes for errors themselves.
var errorTable = map[failure.Kind]statusRow{
	failure.KindInvalid:              {http.StatusUnprocessableEntity, http.StatusBadRequest},
	failure.KindUnauthenticated:      {http.StatusUnauthorized, http.StatusUnauthorized},
	failure.KindForbidden:            {http.StatusForbidden, http.StatusForbidden},
	failure.KindNotFound:             {http.StatusNotFound, http.StatusNotFound},
	failure.KindConflict:             {http.StatusConflict, http.StatusConflict},
	failure.KindTooLarge:             {http.StatusRequestEntityTooLarge, http.StatusRequestEntityTooLarge},
	failure.KindUnsupportedMediaType: {http.StatusUnsupportedMediaType, http.StatusUnsupportedMediaType},
	failure.KindRateLimited:          {http.StatusTooManyRequests, http.StatusTooManyRequests},
	failure.KindNotImplemented:       {http.StatusNotImplemented, http.StatusNotImplemented},
	failure.KindUnavailable:          {http.StatusServiceUnavailable, http.StatusServiceUnavailable},
	failure.KindBadGateway:           {http.StatusBadGateway, http.StatusBadGateway},
	failure.KindInternal:             {http.StatusInternalServerError, http.StatusInternalServerError},
}

// statusFor looks a failure up in the error table.
func statusFor(kind failure.Kind, style errorStyle) int {
	row, ok := errorTable[kind]
	if !ok {
		row = errorTable[failure.KindInternal]
	}
	if style == styleCron || style == styleEmailCreate {
		return row.cronStatus
	}
	return row.status
}

// validationItem is one entry of the FastAPI 422 body.
type validationItem struct {
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
	Type string `json:"type"`
}

// flatError is the body of every non-validation error on messaging routes;
// detail and message carry the same sentence because existing clients read
// one or the other.
type flatError struct {
	Detail  string `json:"detail"`
	Status  string `json:"status"`
	Message string `json:"message"`
	Code    string `json:"code"`
}

type cronErrorBody struct {
	Error cronError `json:"error"`
}

// a1CronError is the error body of the A1Cron routes: A1Cron's
// {success: false, error} with the code and, for validation errors, the
// messages by field ("schedule_config.time").
type a1CronError struct {
	Success bool                `json:"success"`
	Error   string              `json:"error"`
	Code    string              `json:"code"`
	Details map[string][]string `json:"details"`
}

type cronError struct {
	Code    string              `json:"code"`
	Message string              `json:"message"`
	Details map[string][]string `json:"details"`
}

// writeError answers err in the route's error shape. Internal errors are
// logged with the request id and answered without their text.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	fe := failure.As(err)
	style := styleOf(r)
	status := statusFor(fe.Kind, style)
	if fe.Kind == failure.KindInternal {
		slog.ErrorContext(r.Context(), "request failed", "request_id", requestIDFrom(r.Context()), "error", err.Error())
		fe = &failure.Error{Kind: failure.KindInternal, Code: "internal_error", Message: "internal server error"}
	}
	if fe.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(fe.RetryAfter.Seconds()))))
	}
	if style == styleCron || style == styleA1Cron {
		details := map[string][]string{}
		for _, f := range fe.Fields {
			name := fieldName(f)
			details[name] = append(details[name], f.Message)
		}
		if style == styleA1Cron {
			WriteJSON(w, status, a1CronError{Error: errorSentence(fe), Code: fe.Code, Details: details})
			return
		}
		WriteJSON(w, status, cronErrorBody{Error: cronError{Code: fe.Code, Message: fe.Message, Details: details}})
		return
	}
	if fe.Kind == failure.KindInvalid {
		items := make([]validationItem, 0, len(fe.Fields))
		for _, f := range fe.Fields {
			in := f.In
			if in == "" {
				in = "body"
			}
			items = append(items, validationItem{Loc: append([]any{in}, f.Path...), Msg: f.Message, Type: f.Type})
		}
		if len(items) == 0 {
			items = append(items, validationItem{Loc: []any{"body"}, Msg: fe.Message, Type: "value_error"})
		}
		if style == styleProfileSettings {
			WriteJSON(w, status, map[string]any{"detail": items, "message": errorSentence(fe), "status": "error", "code": fe.Code})
			return
		}
		WriteJSON(w, status, map[string]any{"detail": items})
		return
	}
	if len(fe.Details) > 0 {
		WriteJSON(w, status, withDetails(flatError{Detail: fe.Message, Status: "error", Message: fe.Message, Code: fe.Code}, fe.Details))
		return
	}
	WriteJSON(w, status, flatError{Detail: fe.Message, Status: "error", Message: fe.Message, Code: fe.Code})
}

// withDetails is the flat error body with a failure's details beside its
// code (window_closed_at); a detail never replaces one of the body's own
// fields.
func withDetails(e flatError, details map[string]string) map[string]any {
	body := map[string]any{}
	for k, v := range details {
		body[k] = v
	}
	body["detail"], body["status"], body["message"], body["code"] = e.Detail, e.Status, e.Message, e.Code
	return body
}

// errorSentence is the error sentence of an A1Cron answer and of a
// profile-settings validation error: the failure's
// message, or for a validation error each field and its problem, so that
// a client that shows only the text shows what to fix.
func errorSentence(fe *failure.Error) string {
	if len(fe.Fields) == 0 {
		return fe.Message
	}
	parts := make([]string, len(fe.Fields))
	for i, f := range fe.Fields {
		parts[i] = fieldName(f) + ": " + f.Message
	}
	return "invalid request: " + strings.Join(parts, "; ")
}

// fieldName renders a field path as the cron details key: "headers.X-Id",
// "participants.2".
func fieldName(f failure.FieldError) string {
	if len(f.Path) == 0 {
		return f.In
	}
	parts := make([]string, len(f.Path))
	for i, p := range f.Path {
		parts[i] = fmt.Sprint(p)
	}
	return strings.Join(parts, ".")
}

// writeJSON writes v as the response body, with its length: without one,
// net/http sends a body over 2 KiB (five recent messages) in chunks, which
// cost the answer a second write to the socket.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"detail":"internal server error","status":"error","message":"internal server error","code":"internal_error"}`)
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeText writes a plain text body, with its length as writeJSON does.
func WriteText(w http.ResponseWriter, status int, text string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(text)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, text)
}
