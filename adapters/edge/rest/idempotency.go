package rest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// DefaultIdempotencyLock is how long a request holds its Idempotency-Key
// when nothing else is configured: a request's deadline (10 s) and a
// margin. A retry of a request that died takes its key over after that.
const DefaultIdempotencyLock = 15 * time.Second

// The phases of a request with an Idempotency-Key (after Stripe's atomic
// phases): the key is reserved in a transaction of its own; the work runs;
// the answer is recorded. On the send routes (idempotentAnswering) the
// answer commits in the transaction of the work itself, so a crash at any
// point leaves either nothing (a retry, once the claim lapses, runs the
// request) or the work with its answer (a retry replays it). On the other
// routes (idempotent) the middleware records the answer after the
// handler, in its own transaction: a crash between the two commits leaves
// work without an answer, and a retry after the claim lapses runs the
// request again.

// heldKey is a request's reserved Idempotency-Key.
type heldKey struct {
	accountID, key string
}

// answeringHandler serves a route whose work records its own answer: it
// passes answerWith(key, render) to its use case, which records the answer
// in the transaction of the work, and writes the same render's response
// (writeAnswer). key is nil for a request without the header.
type answeringHandler func(w http.ResponseWriter, r *http.Request, key *heldKey)

// answerWith asks a use case to record render's answer to its result under
// key (nil: no key, nothing to record).
func answerWith[T any](key *heldKey, render func(T) idempotency.Response) *idempotency.Completion[T] {
	if key == nil {
		return nil
	}
	return &idempotency.Completion[T]{AccountID: key.accountID, Key: key.key, Render: render}
}

// jsonAnswer is the response writeJSON writes for status and v, as bytes
// to record and write.
func jsonAnswer(status int, v any) idempotency.Response {
	body, err := json.Marshal(v)
	if err != nil {
		return idempotency.Response{Status: http.StatusInternalServerError,
			Body: []byte(`{"detail":"internal server error","status":"error","message":"internal server error","code":"internal_error"}` + "\n")}
	}
	return idempotency.Response{Status: status, Body: append(body, '\n')}
}

// writeAnswer writes a JSON answer, as writeJSON does.
func writeAnswer(w http.ResponseWriter, res idempotency.Response) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(res.Body)))
	w.WriteHeader(res.Status)
	_, _ = w.Write(res.Body)
}

// bufferedResponse captures a response for storing it.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header { return b.header }
func (b *bufferedResponse) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}
func (b *bufferedResponse) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}

// idempotent honours the Idempotency-Key header on a POST route: the first
// request with a key runs and its response is kept for 24 hours; the same
// key with the same method, path and body replays that response and runs
// nothing; with a different request it is 409. Server errors release the
// key so the client may retry with it. The response is recorded after the
// handler (see the phases above).
func (s *server) idempotent(next http.HandlerFunc) http.HandlerFunc {
	return s.idempotentKeeping(next, nil)
}

// idempotentKeeping is idempotent with keep choosing what is stored of a
// response (nil: all of it), so a secret shown once is not kept for
// replays.
func (s *server) idempotentKeeping(next http.HandlerFunc, keep func(body []byte) []byte) http.HandlerFunc {
	return s.keyed(func(w http.ResponseWriter, r *http.Request, _ *heldKey) { next(w, r) }, keep, false)
}

// idempotentAnswering is idempotent for a route whose work records its
// own answer: a success was recorded with the work, in one transaction, and
// is not recorded again; other answers (refusals, which did no work) are
// recorded after the handler, as idempotent does.
func (s *server) idempotentAnswering(next answeringHandler) http.HandlerFunc {
	return s.keyed(next, nil, true)
}

func (s *server) keyed(next answeringHandler, keep func([]byte) []byte, answers bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		if key == "" || s.idempotency == nil {
			next(w, r, nil)
			return
		}
		if len(key) > 255 {
			writeError(w, r, failure.Invalid(failure.FieldError{In: "header", Path: []any{"Idempotency-Key"}, Message: "Idempotency-Key must be at most 255 characters", Type: "string_too_long"}))
			return
		}
		principal, _ := accounts.PrincipalFrom(r.Context())
		body, err := io.ReadAll(r.Body)
		if err != nil {
			writeError(w, r, decodeBodyError(err))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sum := sha256.New()
		sum.Write([]byte(r.Method + " " + r.URL.Path + "\n"))
		sum.Write(body)
		fingerprint := hex.EncodeToString(sum.Sum(nil))

		now := s.now()
		res, err := s.idempotency.ReserveKey(r.Context(), principal.AccountID, key, fingerprint, now, s.idempotencyLock)
		if err != nil {
			writeError(w, r, err)
			return
		}
		switch res.Outcome {
		case idempotency.Replay:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Idempotent-Replayed", "true")
			w.WriteHeader(res.Response.Status)
			_, _ = w.Write(res.Response.Body)
			return
		case idempotency.Mismatch:
			writeError(w, r, failure.Conflict("idempotency_key_reused", "this Idempotency-Key was used with a different request"))
			return
		case idempotency.InFlight:
			writeError(w, r, &failure.Error{Kind: failure.KindConflict, Code: "idempotency_key_in_use",
				Message:    "a request with this Idempotency-Key is still being processed",
				RetryAfter: max(time.Second, res.LockedUntil.Sub(now))})
			return
		}
		buf := &bufferedResponse{header: w.Header()}
		next(buf, r, &heldKey{accountID: principal.AccountID, key: key})
		switch {
		case buf.status >= 500:
			// A send's work and answer commit together, so a server error
			// after a commit whose outcome it could not see releases
			// nothing that committed: the key replays that answer.
			// The request's own deadline may have passed (a 503): the
			// release gets a second of its own. When the database is away
			// it fails, and the claim lapses by itself (the retry meanwhile
			// gets 409 with Retry-After).
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), time.Second)
			err := s.idempotency.ReleaseKey(ctx, principal.AccountID, key)
			cancel()
			if err != nil && !failure.Is(err, failure.KindUnavailable) && !errors.Is(err, context.DeadlineExceeded) {
				s.log.WarnContext(r.Context(), "release idempotency key", "error", err.Error())
			}
		case answers && buf.status < 300:
			// Recorded with the work.
		default:
			if err := s.idempotency.CompleteKey(r.Context(), principal.AccountID, key, idempotency.Response{Status: buf.status, Body: kept(keep, buf.body.Bytes())}); err != nil {
				s.log.WarnContext(r.Context(), "store idempotent response", "error", err.Error())
			}
		}
		w.WriteHeader(buf.status)
		_, _ = w.Write(buf.body.Bytes())
	}
}

func kept(keep func([]byte) []byte, body []byte) []byte {
	if keep == nil {
		return body
	}
	return keep(body)
}
