package store

import (
	"context"
	"database/sql"
	"reflect"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/schema"
)

// zeroDefaults names, per table, the columns whose default in the schema
// is the value a row's zero field would write: ” for a string, 0 for a
// number, false for a bool, NULL for a nullable column read into a pointer,
// a time or an sql.Null type. A batch INSERT leaves out such a column when
// every row holds its zero value, and Postgres fills in the same value:
// the statement is shorter to write, to send and to parse. A nil map
// leaves out nothing.
type zeroDefaults map[string]map[string]string

// omits reports whether an INSERT into table may leave column out when
// every row's field f is zero.
func (z zeroDefaults) omits(table, column string, f *schema.Field) bool {
	def, ok := z[table][column]
	return ok && def != "" && def == zeroWritten(f.StructField.Type)
}

// zeroWritten is the SQL value a zero field of type t is written as ("" when
// it is none of the kinds zeroDefaults knows).
func zeroWritten(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "''"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "0"
	case reflect.Bool:
		return "false"
	case reflect.Pointer:
		return "NULL"
	case reflect.Struct:
		switch t {
		case reflect.TypeFor[time.Time](), reflect.TypeFor[sql.NullString](), reflect.TypeFor[sql.NullInt64](),
			reflect.TypeFor[sql.NullTime](), reflect.TypeFor[sql.NullBool](), reflect.TypeFor[sql.NullInt32]():
			return "NULL"
		}
	}
	return ""
}

// loadZeroDefaults reads the defaults of the current schema's columns
// (Postgres) through q. It runs when the database opens and after
// migrations (on the migrations' connection, without the pool's statement
// timeout), so a column a migration adds is left out from then on; until
// the first read succeeds nothing is left out.
func (db *DB) loadZeroDefaults(ctx context.Context, q bun.IDB) error {
	if db.dialect != Postgres {
		return nil
	}
	var rows []struct {
		Table    string         `bun:"table_name"`
		Column   string         `bun:"column_name"`
		Default  sql.NullString `bun:"column_default"`
		Nullable string         `bun:"is_nullable"`
	}
	err := q.NewRaw(`SELECT table_name, column_name, column_default, is_nullable
		FROM information_schema.columns WHERE table_schema = current_schema()`).Scan(ctx, &rows)
	if err != nil {
		return err
	}
	z := zeroDefaults{}
	for _, r := range rows {
		def := normalDefault(r.Default, r.Nullable == "YES")
		if def == "" {
			continue
		}
		if z[r.Table] == nil {
			z[r.Table] = map[string]string{}
		}
		z[r.Table][r.Column] = def
	}
	db.zeroDefaults.Store(&z)
	return nil
}

// normalDefault is a column's default as zeroWritten words it, "" for any
// other default: Postgres shows the empty string with its cast (text), a number as itself (or
// cast), and a nullable column without a default defaults to NULL.
func normalDefault(def sql.NullString, nullable bool) string {
	if !def.Valid {
		if nullable {
			return "NULL"
		}
		return ""
	}
	v := def.String
	if i := strings.Index(v, "::"); i > 0 {
		v = v[:i]
	}
	v = strings.Trim(v, "()")
	switch v {
	case "''", "0", "false":
		return v
	case "'0'":
		return "0"
	case "NULL":
		if nullable {
			return "NULL"
		}
	}
	return ""
}

// defaults is the schema's zero defaults as last read (nil before).
func (db *DB) defaults() zeroDefaults {
	if z := db.zeroDefaults.Load(); z != nil {
		return *z
	}
	return nil
}
