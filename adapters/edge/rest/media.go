package rest

import (
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/gorilla/mux"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/domain/failure"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// mountMedia adds the routes that stream the media users sent: with the
// account's credentials under /v1, and through a signed link without
// them. The signed route sits outside the authenticated subrouter; a bad
// signature counts against the client address's failed authentications,
// and a good one spends the account's rate limit, as a credential would.
func (s *server) mountMedia(api, top *edge.Routes) {
	api.Handle(http.MethodGet, "/messages/{accountId}/media/{messageId}", s.media)
	top.Handle(http.MethodGet, "/v1/media/{accountId}/{messageId}", s.signedMedia)
}

func (s *server) media(w http.ResponseWriter, r *http.Request) {
	vars := mux.Vars(r)
	s.streamMedia(w, r, vars["accountId"], vars["messageId"])
}

func (s *server) signedMedia(w http.ResponseWriter, r *http.Request) {
	edge.NameRoute(r.Context(), "/v1/media/{accountId}/{messageId}")
	attempt, done := s.limiters.AuthFailures.Attempt(r.Context(), edge.ClientAddress(r))
	if !attempt.Admitted() {
		edge.WriteError(w, r, failure.RateLimited("too many failed authentication attempts from this address", attempt.RetryAfter))
		return
	}
	vars := mux.Vars(r)
	q := r.URL.Query()
	err := s.messaging.CheckMediaLink(vars["accountId"], vars["messageId"], q.Get("expires"), q.Get("signature"))
	done(err != nil)
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	if quota := s.limiters.Accounts.Take(r.Context(), vars["accountId"]); !quota.Admitted() {
		edge.WriteError(w, r, failure.RateLimited("rate limit exceeded for this account", quota.RetryAfter))
		return
	}
	s.streamMedia(w, r, vars["accountId"], vars["messageId"])
}

// streamMedia copies the media of a message from its provider to the
// client as it arrives. The file is the user's: it is served as what it
// is (nosniff), in a sandbox, and as an attachment unless it is an
// image, a video or a sound. A failure after the first byte, such as a
// body over the kind's limit, cuts the connection, so that a client never
// takes a partial file for a whole one.
func (s *server) streamMedia(w http.ResponseWriter, r *http.Request, accountID, messageID string) {
	stream, m, err := s.messaging.Media(r.Context(), accountID, messageID)
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	defer stream.Body.Close()
	h := w.Header()
	h.Set("Content-Type", stream.MimeType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Set("Cache-Control", "private, no-store")
	disposition := "attachment"
	if major, _, _ := strings.Cut(stream.MimeType, "/"); major == "image" || major == "video" || major == "audio" {
		disposition = "inline"
	}
	params := map[string]string{}
	if m.Content.FileName != "" {
		params["filename"] = m.Content.FileName
	}
	if v := mime.FormatMediaType(disposition, params); v != "" {
		h.Set("Content-Disposition", v)
	} else {
		h.Set("Content-Disposition", disposition)
	}
	if stream.Size >= 0 {
		h.Set("Content-Length", strconv.FormatInt(stream.Size, 10))
	}
	w.WriteHeader(http.StatusOK)
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	if _, err := io.CopyBuffer(w, stream.Body, *buf); err != nil {
		slog.WarnContext(r.Context(), "media stream cut", "account_id", accountID, "message_id", messageID, "error", err.Error())
		panic(http.ErrAbortHandler)
	}
}

// copyBuffers are the buffers media streams are copied through, 32 KiB
// each, reused from one stream to the next.
var copyBuffers = sync.Pool{New: func() any {
	b := make([]byte, 32<<10)
	return &b
}}

// mediaBody describes the media of a message: the signed link that opens
// it (as attachment_uri) and what the provider said of the file.
type mediaBody struct {
	URL       string `json:"url"`
	MediaType string `json:"media_type"`
	MimeType  string `json:"mime_type,omitempty"`
	Size      int64  `json:"size,omitempty"`
	FileName  string `json:"file_name,omitempty"`
	Variant   string `json:"variant,omitempty"`
}

// mediaOf is the media of m kept by its provider; nil for other messages.
func mediaOf(m domain.Message) *mediaBody {
	c := m.Content
	if !c.KeptByProvider() {
		return nil
	}
	return &mediaBody{URL: c.MediaURL, MediaType: string(c.Kind), MimeType: c.MimeType, Size: c.Size, FileName: c.FileName, Variant: string(c.Variant)}
}
