package store

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/uptrace/bun"

	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// templateRow is a message template of an agent number.
type templateRow struct {
	bun.BaseModel   `bun:"table:message_templates"`
	NumberID        string    `bun:"number_id,pk"`
	Name            string    `bun:"name,pk"`
	Language        string    `bun:"language,pk"`
	AccountID       string    `bun:"account_id"`
	ProviderID      string    `bun:"provider_id"`
	Status          string    `bun:"status"`
	Category        string    `bun:"category"`
	ParameterFormat string    `bun:"parameter_format"`
	Components      string    `bun:"components"`
	SyncedAt        time.Time `bun:"synced_at"`
}

// templateRead is a template row with its agent number.
type templateRead struct {
	templateRow
	Number string `bun:"number"`
}

func templateToRow(t messaging.Template) templateRow {
	components := t.Components
	if components == nil {
		components = []messaging.TemplateComponent{}
	}
	b, _ := json.Marshal(components) // strings and lists only: it cannot fail
	return templateRow{NumberID: t.NumberID, Name: t.Name, Language: t.Language, AccountID: t.AccountID, ProviderID: t.ProviderID,
		Status: t.Status, Category: t.Category, ParameterFormat: t.ParameterFormat, Components: string(b), SyncedAt: t.SyncedAt}
}

func (r templateRead) domain() messaging.Template {
	var components []messaging.TemplateComponent
	_ = json.Unmarshal([]byte(r.Components), &components) // written by templateToRow
	return messaging.Template{AccountID: r.AccountID, NumberID: r.NumberID, Number: r.Number, ProviderID: r.ProviderID,
		Name: r.Name, Language: r.Language, Status: r.Status, Category: r.Category, ParameterFormat: r.ParameterFormat,
		Components: components, SyncedAt: r.SyncedAt.UTC()}
}

// Templates lists an account's message templates by agent number, name
// and language.
func (r MessagingStore) Templates(ctx context.Context, q appmessaging.TemplateQuery) ([]messaging.Template, error) {
	query := `SELECT t.number_id, t.name, t.language, t.account_id, t.provider_id, t.status, t.category, t.parameter_format,
		t.components, t.synced_at, n.number FROM message_templates AS t JOIN numbers AS n ON n.id = t.number_id WHERE t.account_id = $1`
	args := []any{q.AccountID}
	for _, f := range []struct{ column, value string }{
		{"t.number_id", q.NumberID}, {"t.name", q.Name}, {"t.language", q.Language}, {"t.status", q.Status},
	} {
		if f.value != "" {
			args = append(args, f.value)
			query += " AND " + f.column + " = $" + strconv.Itoa(len(args))
		}
	}
	var rows []templateRead
	if err := r.selectAll(ctx, &rows, query+" ORDER BY n.number, t.name, t.language", args...); err != nil {
		return nil, translate(err, "template")
	}
	out := make([]messaging.Template, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}

// AccountNumbers lists an account's agent numbers, oldest first.
func (r MessagingStore) AccountNumbers(ctx context.Context, accountID string) ([]account.Number, error) {
	return AccountStore(r).Numbers(ctx, accountID)
}

// templateSetRows are the statements of the template sets: for each
// number (its last set), the removal of its templates, and the rows of
// the templates its set has.
func templateSetRows(sets []writes.TemplateSet) ([]rawStatement, []templateRow) {
	var (
		removals []rawStatement
		rows     []templateRow
	)
	for _, set := range latestByID(sets, func(s writes.TemplateSet) string { return s.NumberID }) {
		removals = append(removals, rawStatement{"DELETE FROM message_templates WHERE number_id = ? AND account_id = ?", []any{set.NumberID, set.AccountID}})
		seen := map[string]bool{}
		for _, t := range set.Templates {
			t.AccountID, t.NumberID, t.SyncedAt = set.AccountID, set.NumberID, set.SyncedAt
			if key := t.Name + "\x00" + t.Language; !seen[key] {
				seen[key] = true
				rows = append(rows, templateToRow(t))
			}
		}
	}
	return removals, rows
}

// writeTemplateSets are the SQLite queries of the template sets.
func writeTemplateSets(db bun.IDB, sets []writes.TemplateSet) []batchQuery {
	removals, rows := templateSetRows(sets)
	var out []batchQuery
	for _, s := range removals {
		out = append(out, db.NewRaw(s.sql, s.args...))
	}
	if len(rows) > 0 {
		out = append(out, db.NewInsert().Model(&rows).Returning("NULL"))
	}
	return out
}

// writeTemplateSetsBound are the Postgres statements of the template
// sets.
func writeTemplateSetsBound(tables rowTables, add func(name string, build func(p *binder) string), sets []writes.TemplateSet) {
	removals, rows := templateSetRows(sets)
	for _, s := range removals {
		add("replace message templates", func(p *binder) string { return bindRaw(p, s.sql, s.args) })
	}
	if len(rows) > 0 {
		add("replace message templates", func(p *binder) string { return boundInsert(tables, p, rows, "") })
	}
}
