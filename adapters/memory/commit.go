package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

var _ writes.Committer = (*DB)(nil)

// Commit writes b with its reactions atomically. Each batch is written
// alone, so a refused batch fails only its own caller, as the SQL store's
// group commit promises.
func (db *DB) Commit(ctx context.Context, b writes.Batch) error {
	return db.Repos().WriteBatch(ctx, b)
}

// WriteBatch writes b, with its reactions, in r's transaction (or, outside
// one, atomically on its own).
func (r *Repos) WriteBatch(ctx context.Context, b writes.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkBatch(b); err != nil {
		return err
	}
	// The reactions read the committed tables, as they read another
	// connection on the SQL store, and run before the write takes its
	// turn.
	if r.db.reactions != nil && len(b.Events) > 0 {
		if err := r.db.reactions.React(ctx, &b); err != nil {
			return err
		}
	}
	return r.write(ctx, func(t *tables) error { return t.writeBatch(b, r.db.now()) })
}

// checkBatch refuses what a batch may not hold.
func checkBatch(b writes.Batch) error {
	for _, j := range b.Jobs {
		if err := j.Validate(); err != nil {
			return err
		}
		if j.UniqueKey != "" {
			return fmt.Errorf("job %s: a batch enqueues new work only, without a unique key", j.Kind)
		}
	}
	return nil
}

// writeBatch writes b in the SQL store's order of statements, in which
// every row exists before a statement refers to it; the first refused row
// fails the batch.
func (t *tables) writeBatch(b writes.Batch, now time.Time) error {
	for _, n := range b.Threads {
		if n.Thread.Type == messaging.Individual && t.individualThread(n.Thread.AccountID, n.Thread.Service, n.Thread.AgentNumber, n.Thread.Contact) != nil {
			return writes.ErrThreadExists
		}
		if err := t.insertThread(n.Thread, n.Participants); err != nil {
			return fmt.Errorf("insert threads: %w", err)
		}
	}
	for _, g := range b.Groups {
		if err := t.insertGroup(g); err != nil {
			return fmt.Errorf("insert groups: %w", err)
		}
	}
	for _, g := range b.GroupStates {
		if th, ok := t.threads[g.Thread.ID]; !ok || th.Type != messaging.Group {
			continue // not a group: left as it is
		}
		if err := t.saveGroup(g); err != nil {
			return fmt.Errorf("save group states: %w", err)
		}
	}
	for _, c := range b.GroupChats {
		if err := t.insertGroupChat(c); err != nil {
			return fmt.Errorf("link group chats: %w", err)
		}
	}
	for _, m := range b.Messages {
		if err := t.insertMessage(m); err != nil {
			return fmt.Errorf("insert messages: %w", err)
		}
	}
	// The newest activity of each thread wins; threads that do not exist
	// are left out.
	newest := map[string]time.Time{}
	for _, a := range b.ThreadActivity {
		if prev, ok := newest[a.ThreadID]; !ok || a.At.After(prev) {
			newest[a.ThreadID] = a.At
		}
	}
	for id, at := range newest {
		if th, ok := t.threads[id]; ok {
			th.lastMessageAt, th.UpdatedAt = utc(at), utc(at)
			t.threads[id] = th
		}
	}
	// The newest inbound message of each thread wins; threads that do not
	// exist are left out.
	newestInbound := map[string]time.Time{}
	for _, a := range b.Inbound {
		if err := t.upsertContact(a.AccountID, a.Service, a.Address, a.Name, a.At); err != nil {
			return fmt.Errorf("record inbound activity: %w", err)
		}
		if prev, ok := newestInbound[a.ThreadID]; !ok || a.At.After(prev) {
			newestInbound[a.ThreadID] = a.At
		}
	}
	for id, at := range newestInbound {
		if th, ok := t.threads[id]; ok {
			th.lastMessageAt, th.UpdatedAt, th.LastInboundAt = utc(at), utc(at), utcPtr(&at)
			t.threads[id] = th
		}
	}
	// Changes of one message apply in order: the last one stays.
	for _, s := range b.Statuses {
		if err := t.moveStatus(s); err != nil {
			return fmt.Errorf("move message statuses: %w", err)
		}
	}
	for _, e := range b.Events {
		if err := t.insertEvent(e); err != nil {
			return fmt.Errorf("insert events: %w", err)
		}
	}
	for _, d := range b.Deliveries {
		if err := t.insertDelivery(d); err != nil {
			return fmt.Errorf("insert webhook deliveries: %w", err)
		}
	}
	for _, d := range b.DeliveryStates {
		t.updateDelivery(d) // one that does not exist is left out
	}
	for _, a := range b.Attempts {
		if err := t.insertAttempt(a.DeliveryID, a.Attempt); err != nil {
			return fmt.Errorf("log webhook attempts: %w", err)
		}
	}
	for _, e := range b.EndpointHealth {
		rec, ok := t.endpoints[e.AccountID]
		if !ok {
			continue // no endpoint: left out
		}
		rec = cloneRecord(rec)
		rec.Endpoint.Enabled, rec.Endpoint.DisabledReason, rec.Endpoint.UpdatedAt = e.Enabled, e.DisabledReason, utc(e.UpdatedAt)
		rec.Endpoint.DisabledAt, rec.Endpoint.FailingSince = utcPtr(e.DisabledAt), utcPtr(e.FailingSince)
		t.endpoints[e.AccountID] = rec
	}
	for _, e := range b.Emails {
		if _, ok := t.emails[e.ID]; ok {
			return fmt.Errorf("insert emails: %w", taken("row"))
		}
		if err := t.needAccount(e.AccountID); err != nil {
			return fmt.Errorf("insert emails: %w", err)
		}
		t.emails[e.ID] = cloneEmail(e)
	}
	for _, e := range b.EmailOutcomes {
		t.recordEmailOutcome(e)
	}
	for _, j := range b.Jobs {
		t.enqueue(j, now)
	}
	for _, a := range b.Answers {
		if err := t.recordAnswer(a.AccountID, a.Key, a.Response, now); err != nil {
			return err
		}
	}
	return nil
}

// insertMessage stores a new message of an existing thread; an inbound
// message's provider id is unique per service.
func (t *tables) insertMessage(m messaging.Message) error {
	if _, ok := t.messages[m.ID]; ok {
		return taken("row")
	}
	if t.inboundProviderIDTaken(m) {
		return taken("row")
	}
	if err := t.needAccount(m.AccountID); err != nil {
		return err
	}
	if _, ok := t.threads[m.ThreadID]; !ok {
		return foreignKey("thread", m.ThreadID)
	}
	t.messages[m.ID] = cloneMessage(m)
	return nil
}

// inboundProviderIDTaken tells whether m, inbound, has the provider id of
// another inbound message of its service.
func (t *tables) inboundProviderIDTaken(m messaging.Message) bool {
	if m.Direction != messaging.Inbound || m.ProviderMessageID == "" {
		return false
	}
	for _, o := range t.messages {
		if o.ID != m.ID && o.Direction == messaging.Inbound && o.Service == m.Service && o.ProviderMessageID == m.ProviderMessageID {
			return true
		}
	}
	return false
}

// moveStatus writes a message's new status; an empty provider id keeps
// the one it has. Messages that do not exist are left out.
func (t *tables) moveStatus(s writes.MessageStatus) error {
	m, ok := t.messages[s.MessageID]
	if !ok {
		return nil
	}
	m.Status, m.FailureCode, m.FailureText, m.UpdatedAt = s.Status, s.FailureCode, s.FailureText, utc(s.UpdatedAt)
	if s.ProviderMessageID != "" {
		m.ProviderMessageID = s.ProviderMessageID
	}
	if t.inboundProviderIDTaken(m) {
		return taken("row")
	}
	t.messages[m.ID] = m
	return nil
}
