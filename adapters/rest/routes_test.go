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
	segments, prefix := "sameSegments", "underPath"
	cases := []struct {
		matcher, pattern, path string
		want                   bool
	}{
		{segments, "/v1/emails/{account_id}/send", "/v1/emails/acc_1/send", true},
		{segments, "/v1/emails/{account_id}/send", "/v1/emails/acc_1/sent", false},
		{segments, "/v1/emails/{account_id}/send", "/v1/emails/acc_1/send/", false},
		{segments, "/v1/emails/{account_id}/send", "/v1/emails/acc_1/send/x", false},
		{segments, "/v1/emails/{account_id}/send", "/v1/emails/acc_1", false},
		{segments, "/v1/emails/{account_id}/send", "/v1/emails/acc_1/", false},
		{segments, "/v1/emails/{account_id}/send", "/v2/emails/acc_1/send", false},
		{segments, "/v1/messages/threads/{accountId}/get-all/{phone_number}", "/v1/messages/threads/acc_1/get-all/+15550001111", true},
		{segments, "/v1/messages/threads/{accountId}/get-all", "/v1/messages/threads/acc_1/get-all/+15550001111", false},
		{segments, "/healthz", "/healthz", true},
		{segments, "/healthz", "/healthz/", false},
		{segments, "/healthz", "/", false},
		{prefix, "/v1", "/v1", true},
		{prefix, "/v1", "/v1/emails/acc_1/send", true},
		{prefix, "/v1", "/v10/emails", false},
		{prefix, "/v1", "/v", false},
		{prefix, "/v1/emails", "/v1/emails/acc_1/send", true},
		{prefix, "/v1/emails", "/v1/emailsx/acc_1", false},
	}
	for _, c := range cases {
		match := sameSegments(c.pattern)
		if c.matcher == prefix {
			match = underPath(c.pattern)
		}
		if got := match(httptest.NewRequest("GET", c.path, nil), nil); got != c.want {
			t.Errorf("%s(%q) on %q = %v, want %v", c.matcher, c.pattern, c.path, got, c.want)
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
