package rest

import (
	"net/http"
	"strconv"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// listLimit is the query's limit of a cursor-paged list: 0 when absent,
// Invalid unless an integer from 1 to most.
func listLimit(r *http.Request, most int) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > most {
		return 0, failure.Invalid(failure.FieldError{In: "query", Path: []any{"limit"}, Type: "value_error",
			Message: "limit must be an integer from 1 to " + strconv.Itoa(most)})
	}
	return n, nil
}

// writeCursorPage answers one page of a cursor-paged list: its items as
// the API shows them (body) and next_cursor, null on the last page.
func writeCursorPage[T, B any](w http.ResponseWriter, items []T, body func(T) B, next string) {
	data := make([]B, len(items))
	for i, it := range items {
		data[i] = body(it)
	}
	var cursor any
	if next != "" {
		cursor = next
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"status": "success", "data": data, "next_cursor": cursor})
}
