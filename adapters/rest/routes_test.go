package rest

import (
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// The matchers that spare mux its regular expressions must take every path
// the route's own expression takes, and turn away the rest.
func TestRouteMatchersWithoutExpressions(t *testing.T) {
	t.Parallel()
	segments := []struct {
		template, path string
		want           bool
	}{
		{"/v1/emails/{account_id}/send", "/v1/emails/acc_1/send", true},
		{"/v1/emails/{account_id}/send", "/v1/emails/acc_1/sent", false},
		{"/v1/emails/{account_id}/send", "/v1/emails/acc_1/send/", false},
		{"/v1/emails/{account_id}/send", "/v1/emails/acc_1/send/x", false},
		{"/v1/emails/{account_id}/send", "/v1/emails/acc_1", false},
		{"/v1/emails/{account_id}/send", "/v1/emails/acc_1/", false},
		{"/v1/emails/{account_id}/send", "/v2/emails/acc_1/send", false},
		{"/v1/messages/threads/{accountId}/get-all/{phone_number}", "/v1/messages/threads/acc_1/get-all/+15550001111", true},
		{"/v1/messages/threads/{accountId}/get-all", "/v1/messages/threads/acc_1/get-all/+15550001111", false},
		{"/healthz", "/healthz", true},
		{"/healthz", "/healthz/", false},
		{"/healthz", "/", false},
	}
	for _, c := range segments {
		if got := sameSegments(c.template)(httptest.NewRequest("GET", c.path, nil), nil); got != c.want {
			t.Errorf("sameSegments(%q) on %q = %v, want %v", c.template, c.path, got, c.want)
		}
	}
	prefixes := []struct {
		prefix, path string
		want         bool
	}{
		{"/v1", "/v1", true},
		{"/v1", "/v1/emails/acc_1/send", true},
		{"/v1", "/v10/emails", false},
		{"/v1", "/v", false},
		{"/v1/emails", "/v1/emails/acc_1/send", true},
		{"/v1/emails", "/v1/emailsx/acc_1", false},
	}
	for _, c := range prefixes {
		if got := underPath(c.prefix)(httptest.NewRequest("GET", c.path, nil), nil); got != c.want {
			t.Errorf("underPath(%q) on %q = %v, want %v", c.prefix, c.path, got, c.want)
		}
	}
}

// A JSON answer states its length, so net/http does not send a long one in
// chunks.
func TestWriteJSONStatesTheLength(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	long := map[string]string{"text": strings.Repeat("é", 3000)}
	writeJSON(w, 201, long)
	if got, want := w.Header().Get("Content-Length"), strconv.Itoa(w.Body.Len()); got != want || w.Code != 201 {
		t.Fatalf("status %d, Content-Length %q for a body of %s bytes", w.Code, got, want)
	}
}
