package store

import (
	"strings"

	"github.com/uptrace/bun"

	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// changeColumns are the columns a user's edit or deletion writes, after
// the message id, in the order of changeValues.
var changeColumns = []string{"kind", "body", "caption", "media_url", "media_ref", "media_mime_type", "media_file_name",
	"media_size", "media_variant", "latitude", "longitude", "place_name", "place_address", "buttons", "button_id",
	"previous_text", "edited_at", "deleted_at", "updated_at"}

// changeSet is the SET list of a change: each column from the value
// named by value(column).
func changeSet(value func(column string) string) string {
	set := make([]string, len(changeColumns))
	for i, c := range changeColumns {
		set[i] = c + " = " + value(c)
	}
	return strings.Join(set, ", ")
}

// changeValues are the values of a change, in changeColumns' order, and
// the message id last.
func changeValues(c writes.MessageChange) []any {
	r := messageToRow(messaging.Message{ID: c.MessageID, Content: c.Content, PreviousText: c.PreviousText,
		EditedAt: c.EditedAt, DeletedAt: c.DeletedAt, UpdatedAt: c.UpdatedAt})
	return []any{r.Kind, r.Body, r.Caption, r.MediaURL, r.MediaRef, r.MediaMimeType, r.MediaFileName, r.MediaSize,
		r.MediaVariant, r.Latitude, r.Longitude, r.PlaceName, r.PlaceAddress, r.Buttons, r.ButtonID, r.PreviousText,
		nullableTime(r.EditedAt), nullableTime(r.DeletedAt), r.UpdatedAt, r.ID}
}

// changeCasts are the Postgres types of changeValues.
var changeCasts = []string{"::text", "::text", "::text", "::text", "::text", "::text", "::text", "::bigint", "::text",
	"::double precision", "::double precision", "::text", "::text", "::text", "::text", "::text", "::timestamptz", "::timestamptz", "::timestamptz", "::text"}

// latestChanges keeps the last change of each message.
func latestChanges(changes []writes.MessageChange) []writes.MessageChange {
	return latestByID(changes, func(c writes.MessageChange) string { return c.MessageID })
}

// changeMessages writes users' edits and deletions (SQLite's statement
// set): one UPDATE per message.
func changeMessages(db bun.IDB, changes []writes.MessageChange) []batchQuery {
	kept := latestChanges(changes)
	set := changeSet(func(string) string { return "?" })
	out := make([]batchQuery, len(kept))
	for i, c := range kept {
		out[i] = db.NewRaw("UPDATE messages SET "+set+" WHERE id = ?", changeValues(c)...)
	}
	return out
}

// changeMessagesBound writes users' edits and deletions (Postgres): one
// UPDATE … FROM (VALUES …) for all.
func changeMessagesBound(p *binder, changes []writes.MessageChange) string {
	return updateFrom(p, "UPDATE messages AS m SET "+changeSet(func(c string) string { return "u." + c }),
		latestChanges(changes), changeCasts, changeValues,
		"u("+strings.Join(changeColumns, ", ")+", id) WHERE m.id = u.id")
}
