package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"

	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/messaging"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// MessagingStore is the storage of conversations (messaging.Store): threads, messages, groups and contacts.
type MessagingStore struct{ *Conn }

var _ appmessaging.Store = MessagingStore{}

// MessagingStore is db's MessagingStore, outside any transaction.
func (db *DB) MessagingStore() MessagingStore { return MessagingStore{db.base} }

// Repos is s itself: its methods run each as its own statement outside a
// transaction, and inside the one Decide runs.
func (s MessagingStore) Repos() appmessaging.Repos { return s }

// Decide runs decide in a transaction, reading through s on it, and
// writes the batch it returns there, with its reactions
// (appmessaging.Store).
func (s MessagingStore) Decide(ctx context.Context, decide func(ctx context.Context, tx appmessaging.TxReads) (writes.Batch, error)) error {
	return s.db.decide(ctx, func(ctx context.Context, c *Conn) (writes.Batch, error) { return decide(ctx, MessagingStore{c}) })
}

// NumberByAddress finds an agent number by service and number.
func (r MessagingStore) NumberByAddress(ctx context.Context, service account.Service, number string) (account.Number, error) {
	var row numberRow
	if err := r.selectOne(ctx, &row, "SELECT "+numberColumns+" FROM numbers WHERE service = $1 AND number = $2", string(service), number); err != nil {
		return account.Number{}, translate(err, "number")
	}
	return row.domain(), nil
}

// NumberByID reads one agent number.
func (r MessagingStore) NumberByID(ctx context.Context, id string) (account.Number, error) {
	var row numberRow
	if err := r.selectOne(ctx, &row, "SELECT "+numberColumns+" FROM numbers WHERE id = $1", id); err != nil {
		return account.Number{}, translate(err, "number")
	}
	return row.domain(), nil
}

const threadColumns = "id, account_id, service, type, agent_number, contact, contact_id, name, last_inbound_at, window_closes_at, last_message_at, created_at, updated_at"

type threadRow struct {
	bun.BaseModel `bun:"table:threads"`
	ID            string         `bun:"id,pk"`
	AccountID     string         `bun:"account_id"`
	Service       string         `bun:"service"`
	Type          string         `bun:"type"`
	AgentNumber   string         `bun:"agent_number"`
	Contact       sql.NullString `bun:"contact"`
	ContactID     sql.NullString `bun:"contact_id"`
	Name          string         `bun:"name"`
	LastInboundAt *time.Time     `bun:"last_inbound_at"`
	// WindowClosesAt is written by the batch's Windows only.
	WindowClosesAt *time.Time `bun:"window_closes_at"`
	LastMessageAt  *time.Time `bun:"last_message_at"`
	CreatedAt      time.Time  `bun:"created_at"`
	UpdatedAt      time.Time  `bun:"updated_at"`
}

func (r threadRow) domain() messaging.Thread {
	t := messaging.Thread{
		ID: r.ID, AccountID: r.AccountID, Service: account.Service(r.Service), Type: messaging.ThreadType(r.Type),
		AgentNumber: r.AgentNumber, Contact: r.Contact.String, ContactID: r.ContactID.String, Name: r.Name,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
	if r.LastInboundAt != nil {
		at := r.LastInboundAt.UTC()
		t.LastInboundAt = &at
	}
	if r.WindowClosesAt != nil {
		at := r.WindowClosesAt.UTC()
		t.WindowClosesAt = &at
	}
	return t
}

// IndividualThread finds the thread of an agent number and a user.
func (r MessagingStore) IndividualThread(ctx context.Context, accountID string, service account.Service, agentNumber, contact string) (messaging.Thread, error) {
	var row threadRow
	err := r.selectOne(ctx, &row, "SELECT "+threadColumns+" FROM threads WHERE account_id = $1 AND service = $2 AND agent_number = $3 AND contact = $4 AND type = 'individual'",
		accountID, string(service), agentNumber, contact)
	if err != nil {
		return messaging.Thread{}, translate(err, "thread")
	}
	return row.domain(), nil
}

// Thread reads one thread of an account.
func (r MessagingStore) Thread(ctx context.Context, accountID, id string) (messaging.Thread, error) {
	var row threadRow
	if err := r.selectOne(ctx, &row, "SELECT "+threadColumns+" FROM threads WHERE id = $1 AND account_id = $2", id, accountID); err != nil {
		return messaging.Thread{}, translate(err, "thread")
	}
	return row.domain(), nil
}

type participantRow struct {
	bun.BaseModel `bun:"table:thread_participants"`
	ThreadID      string    `bun:"thread_id,pk"`
	Address       string    `bun:"address,pk"`
	Name          string    `bun:"name"`
	Admin         bool      `bun:"admin"`
	IsAgent       bool      `bun:"is_agent"`
	JoinedAt      time.Time `bun:"joined_at"`
}

func threadToRow(t messaging.Thread) threadRow {
	return threadRow{
		ID: t.ID, AccountID: t.AccountID, Service: string(t.Service), Type: string(t.Type), AgentNumber: t.AgentNumber,
		Contact: nullable(t.Contact), ContactID: nullable(t.ContactID), Name: t.Name, LastInboundAt: t.LastInboundAt,
		WindowClosesAt: t.WindowClosesAt, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
	}
}

// InsertThread stores a thread and its participants. A thread that
// already exists (the individual thread another request created at the
// same moment) is a Conflict that leaves the transaction usable, so the
// caller can read that thread instead.
func (r MessagingStore) InsertThread(ctx context.Context, t messaging.Thread, participants []messaging.Participant) error {
	row := threadToRow(t)
	res, err := r.write.NewInsert().Model(&row).On("CONFLICT DO NOTHING").Exec(ctx)
	if err != nil {
		return translate(err, "thread")
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return failure.Conflict("already_exists", "thread already exists")
	}
	if len(participants) == 0 {
		return nil
	}
	rows := make([]participantRow, len(participants))
	for i, p := range participants {
		rows[i] = participantRow{ThreadID: t.ID, Address: p.Address, Name: p.Name, Admin: p.Admin, IsAgent: p.IsAgent, JoinedAt: t.CreatedAt}
	}
	_, err = r.write.NewInsert().Model(&rows).Exec(ctx)
	return translate(err, "participant")
}

// Participants lists a thread's members, agent first, then by address.
func (r MessagingStore) Participants(ctx context.Context, threadID string) ([]messaging.Participant, error) {
	var rows []participantRow
	if err := r.selectAll(ctx, &rows, "SELECT thread_id, address, name, admin, is_agent, joined_at FROM thread_participants WHERE thread_id = $1 ORDER BY is_agent DESC, address", threadID); err != nil {
		return nil, translate(err, "participant")
	}
	out := make([]messaging.Participant, len(rows))
	for i, p := range rows {
		out[i] = messaging.Participant{Address: p.Address, Name: p.Name, Admin: p.Admin, IsAgent: p.IsAgent}
	}
	return out, nil
}

// Threads lists threads with their participants and last message.
func (r MessagingStore) Threads(ctx context.Context, q appmessaging.ThreadQuery) ([]appmessaging.ThreadSummary, int, error) {
	l := threadListing{accountID: q.AccountID, where: func(sel *bun.SelectQuery) *bun.SelectQuery { return withPhone(sel, q.Phone) }}
	total, err := r.listed(r.read.NewSelect().Model((*threadRow)(nil)), l).Count(ctx)
	if err != nil {
		return nil, 0, translate(err, "thread")
	}
	var rows []threadRow
	// Most recent activity first: the last message, or the creation of a
	// thread that has none yet.
	if err := r.page(ctx, l, q.Offset, q.Limit, &rows); err != nil {
		return nil, 0, translate(err, "thread")
	}
	out := make([]appmessaging.ThreadSummary, len(rows))
	for i, row := range rows {
		out[i].Thread = row.domain()
		if out[i].Participants, err = r.Participants(ctx, row.ID); err != nil {
			return nil, 0, err
		}
		last, err := r.RecentMessages(ctx, row.AccountID, row.ID, 1)
		if err != nil {
			return nil, 0, err
		}
		if len(last) == 1 {
			out[i].LastMessage = &last[0]
		}
	}
	return out, total, nil
}

const messageColumns = "id, account_id, thread_id, service, direction, from_address, to_address, sender_name, kind, body, media_url, caption, latitude, longitude, place_name, place_address, media_ref, media_mime_type, media_file_name, media_size, media_variant, status, failure_code, failure_text, provider_message_id, reply_to_message_id, reply_to_provider_id, quoted_text, buttons, button_id, previous_text, edited_at, deleted_at, user_id, username, contact_id, template, created_at, updated_at"

type messageRow struct {
	bun.BaseModel     `bun:"table:messages"`
	ID                string         `bun:"id,pk"`
	AccountID         string         `bun:"account_id"`
	ThreadID          string         `bun:"thread_id"`
	Service           string         `bun:"service"`
	Direction         string         `bun:"direction"`
	FromAddress       string         `bun:"from_address"`
	ToAddress         string         `bun:"to_address"`
	SenderName        string         `bun:"sender_name"`
	Kind              string         `bun:"kind"`
	Body              string         `bun:"body"`
	MediaURL          string         `bun:"media_url"`
	Caption           string         `bun:"caption"`
	Latitude          float64        `bun:"latitude"`
	Longitude         float64        `bun:"longitude"`
	PlaceName         string         `bun:"place_name"`
	PlaceAddress      string         `bun:"place_address"`
	MediaRef          string         `bun:"media_ref"`
	MediaMimeType     string         `bun:"media_mime_type"`
	MediaFileName     string         `bun:"media_file_name"`
	MediaSize         int64          `bun:"media_size"`
	MediaVariant      string         `bun:"media_variant"`
	Status            string         `bun:"status"`
	FailureCode       string         `bun:"failure_code"`
	FailureText       string         `bun:"failure_text"`
	ProviderMessageID sql.NullString `bun:"provider_message_id"`
	ReplyToMessageID  string         `bun:"reply_to_message_id"`
	ReplyToProviderID string         `bun:"reply_to_provider_id"`
	QuotedText        string         `bun:"quoted_text"`
	Buttons           string         `bun:"buttons"`
	ButtonID          string         `bun:"button_id"`
	PreviousText      string         `bun:"previous_text"`
	EditedAt          *time.Time     `bun:"edited_at"`
	DeletedAt         *time.Time     `bun:"deleted_at"`
	UserID            string         `bun:"user_id"`
	Username          string         `bun:"username"`
	ContactID         string         `bun:"contact_id"`
	Template          string         `bun:"template"`
	CreatedAt         time.Time      `bun:"created_at"`
	UpdatedAt         time.Time      `bun:"updated_at"`
}

func messageToRow(m messaging.Message) messageRow {
	c := m.Content
	return messageRow{
		ID: m.ID, AccountID: m.AccountID, ThreadID: m.ThreadID, Service: string(m.Service), Direction: string(m.Direction),
		FromAddress: m.From, ToAddress: m.To, SenderName: m.SenderName, Kind: string(c.Kind), Body: c.Text,
		MediaURL: c.MediaURL, Caption: c.Caption, Latitude: c.Latitude, Longitude: c.Longitude,
		PlaceName: c.PlaceName, PlaceAddress: c.Address, MediaRef: c.MediaRef, MediaMimeType: c.MimeType,
		MediaFileName: c.FileName, MediaSize: c.Size, MediaVariant: string(c.Variant), Status: string(m.Status), FailureCode: m.FailureCode,
		FailureText: m.FailureText, ProviderMessageID: nullable(m.ProviderMessageID),
		ReplyToMessageID: m.ReplyTo.MessageID, ReplyToProviderID: m.ReplyTo.ProviderMessageID, QuotedText: m.ReplyTo.Text,
		Buttons: buttonsColumn(c.Buttons), ButtonID: c.ButtonID,
		PreviousText: m.PreviousText, EditedAt: m.EditedAt, DeletedAt: m.DeletedAt,
		UserID: m.UserID, Username: m.Username, ContactID: m.ContactID, Template: templateColumn(c.Template),
		CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt,
	}
}

func (r messageRow) domain() messaging.Message {
	return messaging.Message{
		ID: r.ID, AccountID: r.AccountID, ThreadID: r.ThreadID, Service: account.Service(r.Service),
		Direction: messaging.Direction(r.Direction), From: r.FromAddress, To: r.ToAddress, SenderName: r.SenderName,
		Content: messaging.Content{
			Kind: messaging.Kind(r.Kind), Text: r.Body, MediaURL: r.MediaURL, Caption: r.Caption,
			Latitude: r.Latitude, Longitude: r.Longitude, PlaceName: r.PlaceName, Address: r.PlaceAddress,
			MediaRef: r.MediaRef, MimeType: r.MediaMimeType, FileName: r.MediaFileName, Size: r.MediaSize,
			Variant: messaging.MediaVariant(r.MediaVariant), Buttons: buttonsOf(r.Buttons), ButtonID: r.ButtonID,
			Template: templateOf(r.Template),
		},
		Status: messaging.Status(r.Status), FailureCode: r.FailureCode, FailureText: r.FailureText,
		ProviderMessageID: r.ProviderMessageID.String,
		ReplyTo:           messaging.Reply{MessageID: r.ReplyToMessageID, ProviderMessageID: r.ReplyToProviderID, Text: r.QuotedText},
		PreviousText:      r.PreviousText, EditedAt: utcPtr(r.EditedAt), DeletedAt: utcPtr(r.DeletedAt),
		UserID: r.UserID, Username: r.Username, ContactID: r.ContactID,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
}

// buttonsColumn is the buttons column of a message: a JSON array of
// {id, title}, or empty for a message without buttons.
func buttonsColumn(buttons []messaging.Button) string {
	if len(buttons) == 0 {
		return ""
	}
	b, _ := json.Marshal(webhook.Buttons(buttons)) // strings only: it cannot fail
	return string(b)
}

// buttonsOf reads the buttons column (only buttonsColumn writes it).
func buttonsOf(column string) []messaging.Button {
	var rows []webhook.Button
	if column == "" || json.Unmarshal([]byte(column), &rows) != nil {
		return nil
	}
	return webhook.ModelButtons(rows)
}

// templateColumn is the template column of a message: the template send
// as JSON, or empty for a message that is no template.
func templateColumn(t *messaging.TemplateSend) string {
	if t == nil {
		return ""
	}
	b, _ := json.Marshal(t) // strings, numbers and lists only: it cannot fail
	return string(b)
}

// templateOf reads the template column (only templateColumn writes it).
func templateOf(column string) *messaging.TemplateSend {
	if column == "" {
		return nil
	}
	var t messaging.TemplateSend
	if json.Unmarshal([]byte(column), &t) != nil {
		return nil
	}
	return &t
}

// Message reads a message of an account.
func (r MessagingStore) Message(ctx context.Context, accountID, id string) (messaging.Message, error) {
	var row messageRow
	if err := r.selectOne(ctx, &row, "SELECT "+messageColumns+" FROM messages WHERE id = $1 AND account_id = $2", id, accountID); err != nil {
		return messaging.Message{}, translate(err, "message")
	}
	return row.domain(), nil
}

// MessageForUpdate reads a message of an account; inside a transaction
// the message stays locked until it ends (on SQLite the transaction holds
// the write lock already).
func (r MessagingStore) MessageForUpdate(ctx context.Context, accountID, id string) (messaging.Message, error) {
	var row messageRow
	if err := r.selectOne(ctx, &row, "SELECT "+messageColumns+" FROM messages WHERE id = $1 AND account_id = $2"+r.lockForUpdate(), id, accountID); err != nil {
		return messaging.Message{}, translate(err, "message")
	}
	return row.domain(), nil
}

// MessageByID reads a message of any account.
func (r MessagingStore) MessageByID(ctx context.Context, id string) (messaging.Message, error) {
	var row messageRow
	if err := r.selectOne(ctx, &row, "SELECT "+messageColumns+" FROM messages WHERE id = $1", id); err != nil {
		return messaging.Message{}, translate(err, "message")
	}
	return row.domain(), nil
}

// MessageByProviderID finds a message by the channel's id for it.
func (r MessagingStore) MessageByProviderID(ctx context.Context, service account.Service, providerID string) (messaging.Message, error) {
	var row messageRow
	if err := r.selectOne(ctx, &row, "SELECT "+messageColumns+" FROM messages WHERE service = $1 AND provider_message_id = $2 LIMIT 1", string(service), providerID); err != nil {
		return messaging.Message{}, translate(err, "message")
	}
	return row.domain(), nil
}

// RecentMessages returns a thread's newest messages, newest first, if the
// thread is the account's.
//
// The limit is written into the statement, not bound, so that Postgres
// keeps a plan per limit. With LIMIT $3, Postgres judges the generic plan
// of the prepared statement (which cannot know the limit) costlier than a
// plan for the values, and plans the statement again at every execution.
// The callers use few limits (5 and 1), so few statements.
func (r MessagingStore) RecentMessages(ctx context.Context, accountID, threadID string, limit int) ([]messaging.Message, error) {
	var rows []messageRow
	query := "SELECT " + messageColumns + " FROM messages WHERE thread_id = $1 AND account_id = $2 ORDER BY " + messagesNewestFirst + " LIMIT " + strconv.Itoa(max(limit, 0))
	if err := r.selectAll(ctx, &rows, query, threadID, accountID); err != nil {
		return nil, translate(err, "message")
	}
	out := make([]messaging.Message, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}

// contactRow is a user known to an account on a service.
type contactRow struct {
	bun.BaseModel `bun:"table:contacts"`
	AccountID     string    `bun:"account_id"`
	Service       string    `bun:"service"`
	Address       string    `bun:"address"`
	Name          string    `bun:"name"`
	CreatedAt     time.Time `bun:"created_at"`
	UpdatedAt     time.Time `bun:"updated_at"`
}

// deliverableRow is a message with its thread's type and its sending
// number's columns (NULL when no number has the message's from address).
type deliverableRow struct {
	messageRow
	ThreadType string         `bun:"thread_type"`
	NID        sql.NullString `bun:"n_id"`
	NAccountID sql.NullString `bun:"n_account_id"`
	NNumber    sql.NullString `bun:"n_number"`
	NService   sql.NullString `bun:"n_service"`
	NProvider  sql.NullString `bun:"n_provider"`
	NSealed    []byte         `bun:"n_sealed_settings"`
	NEnabled   sql.NullBool   `bun:"n_enabled"`
	NCreatedAt *time.Time     `bun:"n_created_at"`
	// The number's profile.
	NProfileName       sql.NullString `bun:"n_profile_name"`
	NProfilePictureURL sql.NullString `bun:"n_profile_picture_url"`
	NProfileUpdatedAt  *time.Time     `bun:"n_profile_updated_at"`
}

// MessagesToDeliver reads messages with their thread's type and sending
// number in one query, for the deliveries that concurrent workers are
// about to make.
func (r MessagingStore) MessagesToDeliver(ctx context.Context, ids []string) ([]appmessaging.Deliverable, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var rows []deliverableRow
	if err := r.selectByIDs(ctx, &rows, messagesToDeliverQuery, ids); err != nil {
		return nil, translate(err, "message")
	}
	out := make([]appmessaging.Deliverable, len(rows))
	for i, row := range rows {
		d := appmessaging.Deliverable{Message: row.messageRow.domain(), ThreadType: messaging.ThreadType(row.ThreadType), NumberFound: row.NID.Valid}
		if d.NumberFound {
			n := numberRow{ID: row.NID.String, AccountID: row.NAccountID.String, Number: row.NNumber.String, Service: row.NService.String,
				Provider: row.NProvider.String, SealedSettings: row.NSealed, Enabled: row.NEnabled.Bool,
				ProfileName: row.NProfileName.String, ProfilePictureURL: row.NProfilePictureURL.String, ProfileUpdatedAt: row.NProfileUpdatedAt}
			if row.NCreatedAt != nil {
				n.CreatedAt = *row.NCreatedAt
			}
			d.Number = n.domain()
		}
		out[i] = d
	}
	return out, nil
}

// messageDetailsRow is a message with its thread's columns (t_ prefixed)
// and its thread's participants (messageDetailsQuery).
type messageDetailsRow struct {
	messageRow
	Thread threadRow `bun:"embed:t_"`
	// Participants is the thread's participants as a JSON array of
	// [address, name, admin, is_agent] arrays.
	Participants string `bun:"participants"`
}

// participants decodes the aggregated participants. Booleans come as JSON
// booleans from Postgres and as 0 and 1 from SQLite.
func (row messageDetailsRow) participants() ([]messaging.Participant, error) {
	var tuples [][4]any
	if err := json.Unmarshal([]byte(row.Participants), &tuples); err != nil {
		return nil, fmt.Errorf("participants of thread %s: %w", row.Thread.ID, err)
	}
	truth := func(v any) bool { b, isBool := v.(bool); n, _ := v.(float64); return b || (!isBool && n != 0) }
	out := make([]messaging.Participant, len(tuples))
	for i, t := range tuples {
		address, _ := t[0].(string)
		name, _ := t[1].(string)
		out[i] = messaging.Participant{Address: address, Name: name, Admin: truth(t[2]), IsAgent: truth(t[3])}
	}
	return out, nil
}

// columnsOf qualifies columns (a "a, b" list) with alias, each named
// prefix+column in the result ("t." and "t_": t.a AS t_a), or keeping its
// name when prefix is empty.
func columnsOf(columns, alias, prefix string) string {
	cols := strings.Split(columns, ", ")
	for i, c := range cols {
		cols[i] = alias + "." + c
		if prefix != "" {
			cols[i] += " AS " + prefix + c
		}
	}
	return strings.Join(cols, ", ")
}

// messageDetailsQuery reads a message of an account with its thread and,
// aggregated as JSON in the order Participants gives, the thread's
// participants: one round trip for a message's details.
func messageDetailsQuery(dialect Dialect) string {
	participants := `(SELECT COALESCE(json_agg(json_build_array(p.address, p.name, p.admin, p.is_agent) ORDER BY p.is_agent DESC, p.address), '[]')::text
		FROM thread_participants p WHERE p.thread_id = t.id)`
	if dialect != Postgres {
		participants = `(SELECT COALESCE(json_group_array(json_array(p.address, p.name, p.admin, p.is_agent)), '[]')
		FROM (SELECT address, name, admin, is_agent FROM thread_participants WHERE thread_id = t.id ORDER BY is_agent DESC, address) p)`
	}
	return "SELECT " + columnsOf(messageColumns, "m", "") + ", " + columnsOf(threadColumns, "t", "t_") + ", " + participants + ` AS participants
	FROM messages m JOIN threads t ON t.id = m.thread_id WHERE m.id = $1 AND m.account_id = $2`
}

// messageDetailsQueries are messageDetailsQuery's text per dialect.
var messageDetailsQueries = map[Dialect]string{Postgres: messageDetailsQuery(Postgres), SQLite: messageDetailsQuery(SQLite)}

// messagesToDeliverQuery reads messages with their thread's type and their
// sending number (MessagesToDeliver).
var messagesToDeliverQuery = newByIDs("SELECT " + columnsOf(messageColumns, "m", "") + ", t.type AS thread_type, " + columnsOf(numberColumns, "n", "n_") + `
	FROM messages m JOIN threads t ON t.id = m.thread_id AND t.account_id = m.account_id
	LEFT JOIN numbers n ON n.service = m.service AND n.number = m.from_address
	WHERE m.id IN (?)`)

// MessageDetails reads a message of an account, its thread and the
// thread's participants in one query.
func (r MessagingStore) MessageDetails(ctx context.Context, accountID, id string) (appmessaging.MessageDetails, error) {
	var row messageDetailsRow
	if err := r.selectOne(ctx, &row, messageDetailsQueries[r.dialect], id, accountID); err != nil {
		return appmessaging.MessageDetails{}, translate(err, "message")
	}
	parts, err := row.participants()
	if err != nil {
		return appmessaging.MessageDetails{}, err
	}
	return appmessaging.MessageDetails{Message: row.messageRow.domain(), Thread: row.Thread.domain(), Participants: parts}, nil
}
