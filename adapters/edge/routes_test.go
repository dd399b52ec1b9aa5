package edge

import (
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// A JSON answer states its length, so net/http does not send a long one in
// chunks.
func TestWriteJSONStatesTheLength(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	long := map[string]string{"text": strings.Repeat("é", 3000)}
	WriteJSON(w, 201, long)
	if got, want := w.Header().Get("Content-Length"), strconv.Itoa(w.Body.Len()); got != want || w.Code != 201 {
		t.Fatalf("status %d, Content-Length %q for a body of %s bytes", w.Code, got, want)
	}
}
