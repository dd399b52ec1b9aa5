package store

import (
	"database/sql"
	"errors"

	"github.com/uptrace/bun/driver/pgdriver"
	"modernc.org/sqlite"

	"github.com/switchboard-dev/switchboard/domain/failure"
)

// SQLite extended result codes for constraint violations (sqlite3.h).
const (
	sqliteConstraintPrimaryKey = 1555
	sqliteConstraintUnique     = 2067
)

// translate turns driver errors into domain failures: what is the store's own
// business (a missing row, a taken unique value) becomes a typed error; the
// rest stays an infrastructure error for the caller to wrap.
func translate(err error, what string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return failure.NotFound(what)
	}
	if isUniqueViolation(err) {
		return &failure.Error{Kind: failure.KindConflict, Code: "already_exists", Message: what + " already exists", Err: err}
	}
	return err
}

func isUniqueViolation(err error) bool {
	var pgErr pgdriver.Error
	if errors.As(err, &pgErr) {
		return pgErr.Field('C') == "23505"
	}
	var liteErr *sqlite.Error
	if errors.As(err, &liteErr) {
		return liteErr.Code() == sqliteConstraintUnique || liteErr.Code() == sqliteConstraintPrimaryKey
	}
	return false
}
