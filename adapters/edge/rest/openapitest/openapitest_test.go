package openapitest_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/edge/rest/openapitest"
)

// The validator must reject what the document does not allow; otherwise
// every REST test's check would pass vacuously.
func TestValidateRejectsWhatTheDocumentForbids(t *testing.T) {
	t.Parallel()
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/v1/accounts/acc_1", nil)
	respond := func(status int, body string) (*http.Response, []byte) {
		return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(bytes.NewReader([]byte(body)))}, []byte(body)
	}
	ok := `{"status":"success","data":{"account_id":"acc_1","name":"A","created_at":"2026-11-22T10:00:00Z","updated_at":"2026-11-22T10:00:00Z","service_email_domain":"d","history_retention_days":30,"history_retention_source":"server","message_retention_days":null,"numbers":[],"email_addresses":[],"domains":[]}}`
	resp, body := respond(200, ok)
	require.NoError(t, openapitest.Validate(req, resp, body))

	resp, body = respond(200, `{"status":"success","data":{"account_id":"acc_1"}}`)
	require.Error(t, openapitest.Validate(req, resp, body), "missing required fields")

	resp, body = respond(418, `{"detail":"x","status":"error","message":"x","code":"teapot"}`)
	require.Error(t, openapitest.Validate(req, resp, body), "undeclared status")

	resp, body = respond(401, `{"detail":"x"}`)
	require.Error(t, openapitest.Validate(req, resp, body), "error body missing fields")

	unknown := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/v1/none", nil)
	resp, body = respond(200, `{}`)
	require.Error(t, openapitest.Validate(unknown, resp, body), "an undocumented route may only answer 404/405")
	resp, body = respond(404, `{"detail":"x","status":"error","message":"x","code":"route_not_found"}`)
	require.NoError(t, openapitest.Validate(unknown, resp, body))
}
