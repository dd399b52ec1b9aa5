package store

import (
	"database/sql"
	"testing"
)

// A column is left out only for a default that is the zero value, as
// Postgres words it.
func TestNormalDefault(t *testing.T) {
	for _, c := range []struct {
		def      sql.NullString
		nullable bool
		want     string
	}{
		{sql.NullString{String: "''::text", Valid: true}, false, "''"},
		{sql.NullString{String: "0", Valid: true}, false, "0"},
		{sql.NullString{String: "'0'::bigint", Valid: true}, false, "0"},
		{sql.NullString{String: "false", Valid: true}, false, "false"},
		{sql.NullString{String: "NULL::text", Valid: true}, true, "NULL"},
		{sql.NullString{}, true, "NULL"},
		{sql.NullString{}, false, ""},
		{sql.NullString{String: "'queued'::text", Valid: true}, false, ""},
		{sql.NullString{String: "now()", Valid: true}, false, ""},
		{sql.NullString{String: "1", Valid: true}, false, ""},
		{sql.NullString{String: "true", Valid: true}, false, ""},
		{sql.NullString{String: "nextval('jobs_id_seq'::regclass)", Valid: true}, false, ""},
	} {
		if got := normalDefault(c.def, c.nullable); got != c.want {
			t.Errorf("normalDefault(%q, %v) = %q, want %q", c.def.String, c.nullable, got, c.want)
		}
	}
}
