package rest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"time"

	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// idempotencyLock is how long a request holds its key before another
// request may take it over (its handler died).
const idempotencyLock = time.Minute

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
// key so the client may retry with it.
func (s *server) idempotent(next http.HandlerFunc) http.HandlerFunc {
	return s.idempotentKeeping(next, nil)
}

// idempotentKeeping is idempotent with keep choosing what is stored of a
// response (nil: all of it), so a secret shown once is not kept for
// replays.
func (s *server) idempotentKeeping(next http.HandlerFunc, keep func(body []byte) []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		if key == "" || s.idempotency == nil {
			next(w, r)
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

		res, err := s.idempotency.ReserveKey(r.Context(), principal.AccountID, key, fingerprint, s.now(), idempotencyLock)
		if err != nil {
			writeError(w, r, err)
			return
		}
		switch res.Outcome {
		case idempotency.Replay:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Idempotent-Replayed", "true")
			w.WriteHeader(res.Status)
			_, _ = w.Write(res.Body)
			return
		case idempotency.Mismatch:
			writeError(w, r, failure.Conflict("idempotency_key_reused", "this Idempotency-Key was used with a different request"))
			return
		case idempotency.InFlight:
			writeError(w, r, failure.Conflict("idempotency_key_in_use", "a request with this Idempotency-Key is still being processed"))
			return
		}
		buf := &bufferedResponse{header: w.Header()}
		next(buf, r)
		if buf.status >= 500 {
			_ = s.idempotency.ReleaseKey(r.Context(), principal.AccountID, key)
		} else if err := s.idempotency.CompleteKey(r.Context(), principal.AccountID, key, buf.status, kept(keep, buf.body.Bytes())); err != nil {
			s.log.WarnContext(r.Context(), "store idempotent response", "error", err.Error())
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
