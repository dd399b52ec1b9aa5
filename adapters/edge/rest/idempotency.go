package rest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/idempotency"
)

// answeringHandler serves a route whose work records its own answer: it
// passes edge.AnswerWith(key, render) to its use case, which records the
// answer in the transaction of the work, and writes the same render's
// response (writeAnswer). key is nil for a request without the header.
type answeringHandler func(w http.ResponseWriter, r *http.Request, key *edge.Held)

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
// handler (see edge.Idempotency).
func (s *server) idempotent(next http.HandlerFunc) http.HandlerFunc {
	return s.idempotentKeeping(next, nil)
}

// idempotentKeeping is idempotent with keep choosing what is stored of a
// response (nil: all of it), so a secret shown once is not kept for
// replays.
func (s *server) idempotentKeeping(next http.HandlerFunc, keep func(body []byte) []byte) http.HandlerFunc {
	return s.keyed(func(w http.ResponseWriter, r *http.Request, _ *edge.Held) { next(w, r) }, keep, false)
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
		principal, _ := accounts.PrincipalFrom(r.Context())
		// A key too long is refused by Begin before the body is read.
		fingerprint := ""
		if len(key) <= edge.MaxIdempotencyKey {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				edge.WriteError(w, r, decodeBodyError(err))
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			fingerprint = edge.Fingerprint(r.Method+" "+r.URL.Path, body)
		}
		held, replay, err := s.idempotency.Begin(r.Context(), edge.HeaderWords, principal.AccountID, key, fingerprint)
		if err != nil {
			edge.WriteError(w, r, err)
			return
		}
		if replay != nil {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Idempotent-Replayed", "true")
			w.WriteHeader(replay.Status)
			_, _ = w.Write(replay.Body)
			return
		}
		buf := &bufferedResponse{header: w.Header()}
		next(buf, r, held)
		switch {
		case buf.status >= 500:
			// A send's work and answer commit together, so a server error
			// after a commit whose outcome it could not see releases
			// nothing that committed: the key replays that answer.
			held.Finish(r.Context(), edge.ServerFailed, idempotency.Response{})
		case answers && buf.status < 300:
			held.Finish(r.Context(), edge.AnsweredWithWork, idempotency.Response{})
		default:
			held.Finish(r.Context(), edge.Answered, idempotency.Response{Status: buf.status, Body: kept(keep, buf.body.Bytes())})
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
