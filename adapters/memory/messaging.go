package memory

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

var (
	_ appmessaging.Repos        = (*Repos)(nil)
	_ appmessaging.PageRepos    = (*Repos)(nil)
	_ appmessaging.LiveMessages = (*Repos)(nil)
)

// threadRow is a thread with the columns only groups use and the time of
// its last message.
type threadRow struct {
	messaging.Thread
	// lastMessageAt is zero while the thread has no message.
	lastMessageAt time.Time
	description   string
	pictureURL    string
	// inviteCode is unique among groups when set.
	inviteCode   string
	announcement bool
	locked       bool
}

// activity is the threads' listing order: the last message, or the
// creation of a thread that has none yet.
func (th threadRow) activity() time.Time {
	if th.lastMessageAt.IsZero() {
		return th.CreatedAt
	}
	return th.lastMessageAt
}

// mostRecentFirst orders threads by activity, newest first, then id.
func mostRecentFirst(a, b threadRow) int {
	return cmp.Or(b.activity().Compare(a.activity()), strings.Compare(b.ID, a.ID))
}

// newestFirst orders messages by creation, newest first, then id.
func newestFirst(a, b messaging.Message) int {
	return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(b.ID, a.ID))
}

// contactRow is a user an account's numbers heard from.
type contactRow struct {
	name      string
	createdAt time.Time
	updatedAt time.Time
}

// NumberByAddress finds an agent number by service and number, any
// account's.
func (r *Repos) NumberByAddress(ctx context.Context, service account.Service, number string) (account.Number, error) {
	var out account.Number
	err := r.read(ctx, func(t *tables) error {
		n := t.numberByAddress(service, number)
		if n == nil {
			return failure.NotFound("number")
		}
		out = cloneNumber(*n)
		return nil
	})
	return out, err
}

// NumberByID reads an agent number of any account.
func (r *Repos) NumberByID(ctx context.Context, id string) (account.Number, error) {
	var out account.Number
	err := r.read(ctx, func(t *tables) error {
		n, ok := t.numbers[id]
		if !ok {
			return failure.NotFound("number")
		}
		out = cloneNumber(n)
		return nil
	})
	return out, err
}

// IndividualThread finds the thread of an agent number and a user.
func (r *Repos) IndividualThread(ctx context.Context, accountID string, service account.Service, agentNumber, contact string) (messaging.Thread, error) {
	var out messaging.Thread
	err := r.read(ctx, func(t *tables) error {
		th := t.individualThread(accountID, service, agentNumber, contact)
		if th == nil {
			return failure.NotFound("thread")
		}
		out = cloneThread(th.Thread)
		return nil
	})
	return out, err
}

// individualThread is the unique individual thread of the four values;
// none without a contact (a NULL, which SQL's unique index never matches).
func (t *tables) individualThread(accountID string, service account.Service, agentNumber, contact string) *threadRow {
	if contact == "" {
		return nil
	}
	for _, th := range t.threads {
		if th.Type == messaging.Individual && th.AccountID == accountID && th.Service == service && th.AgentNumber == agentNumber && th.Contact == contact {
			return &th
		}
	}
	return nil
}

// Thread reads a thread of the account.
func (r *Repos) Thread(ctx context.Context, accountID, id string) (messaging.Thread, error) {
	var out messaging.Thread
	err := r.read(ctx, func(t *tables) error {
		th, ok := t.threads[id]
		if !ok || th.AccountID != accountID {
			return failure.NotFound("thread")
		}
		out = cloneThread(th.Thread)
		return nil
	})
	return out, err
}

// InsertThread stores a thread and its participants. A thread that exists
// already (by id, or the individual thread of the same user) is a
// Conflict that leaves a transaction usable.
func (r *Repos) InsertThread(ctx context.Context, th messaging.Thread, participants []messaging.Participant) error {
	return r.write(ctx, func(t *tables) error { return t.insertThread(th, participants) })
}

func (t *tables) insertThread(th messaging.Thread, participants []messaging.Participant) error {
	if _, ok := t.threads[th.ID]; ok {
		return failure.Conflict("already_exists", "thread already exists")
	}
	if th.Type == messaging.Individual && t.individualThread(th.AccountID, th.Service, th.AgentNumber, th.Contact) != nil {
		return failure.Conflict("already_exists", "thread already exists")
	}
	if err := t.needAccount(th.AccountID); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, p := range participants {
		if seen[p.Address] {
			return taken("participant")
		}
		seen[p.Address] = true
	}
	t.threads[th.ID] = threadRow{Thread: cloneThread(th)}
	t.setParticipants(th.ID, participants)
	return nil
}

// setParticipants replaces a thread's members, kept in Participants'
// order: the agent first, then by address.
func (t *tables) setParticipants(threadID string, ps []messaging.Participant) {
	if len(ps) == 0 {
		delete(t.participants, threadID)
		return
	}
	ps = slices.Clone(ps)
	slices.SortFunc(ps, func(a, b messaging.Participant) int {
		if a.IsAgent != b.IsAgent {
			if a.IsAgent {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Address, b.Address)
	})
	t.participants[threadID] = ps
}

// Participants lists a thread's members, agent first, then by address.
func (r *Repos) Participants(ctx context.Context, threadID string) ([]messaging.Participant, error) {
	var out []messaging.Participant
	err := r.read(ctx, func(t *tables) error {
		out = append(make([]messaging.Participant, 0), t.participants[threadID]...)
		return nil
	})
	return out, err
}

// takesPart tells whether phone is the thread's agent number, its user or
// one of its participants.
func (t *tables) takesPart(th threadRow, phone string) bool {
	if th.AgentNumber == phone || th.Contact == phone {
		return true
	}
	return slices.ContainsFunc(t.participants[th.ID], func(p messaging.Participant) bool { return p.Address == phone })
}

// Threads lists an account's threads, most recently active first, with
// their participants and last message, and the number matching.
func (r *Repos) Threads(ctx context.Context, q appmessaging.ThreadQuery) ([]appmessaging.ThreadSummary, int, error) {
	var (
		out   []appmessaging.ThreadSummary
		total int
	)
	err := r.read(ctx, func(t *tables) error {
		rows := sorted(t.threads, func(th threadRow) bool {
			return th.AccountID == q.AccountID && (q.Phone == "" || t.takesPart(th, q.Phone))
		}, mostRecentFirst)
		total = len(rows)
		rows = window(rows, q.Offset, unbounded(q.Limit))
		out = make([]appmessaging.ThreadSummary, len(rows))
		for i, th := range rows {
			out[i] = appmessaging.ThreadSummary{Thread: cloneThread(th.Thread), Participants: append(make([]messaging.Participant, 0), t.participants[th.ID]...)}
			if last := t.messagePage(th.AccountID, th.ID, nil, 1); len(last) == 1 {
				out[i].LastMessage = &last[0]
			}
		}
		return nil
	})
	return out, total, err
}

// Message reads a message of the account.
func (r *Repos) Message(ctx context.Context, accountID, id string) (messaging.Message, error) {
	return r.message(ctx, func(t *tables) (messaging.Message, bool) {
		m, ok := t.messages[id]
		return m, ok && m.AccountID == accountID
	})
}

// MessageByID reads a message of any account.
func (r *Repos) MessageByID(ctx context.Context, id string) (messaging.Message, error) {
	return r.message(ctx, func(t *tables) (messaging.Message, bool) {
		m, ok := t.messages[id]
		return m, ok
	})
}

// MessageByProviderID finds a message by the channel's id for it (the
// oldest, when outbound and inbound messages share it).
func (r *Repos) MessageByProviderID(ctx context.Context, service account.Service, providerID string) (messaging.Message, error) {
	return r.message(ctx, func(t *tables) (messaging.Message, bool) {
		found := sorted(t.messages, func(m messaging.Message) bool {
			return m.Service == service && m.ProviderMessageID != "" && m.ProviderMessageID == providerID
		}, func(a, b messaging.Message) int { return newestFirst(b, a) })
		if len(found) == 0 {
			return messaging.Message{}, false
		}
		return found[0], true
	})
}

// message reads the message that find finds.
func (r *Repos) message(ctx context.Context, find func(t *tables) (messaging.Message, bool)) (messaging.Message, error) {
	var out messaging.Message
	err := r.read(ctx, func(t *tables) error {
		m, ok := find(t)
		if !ok {
			return failure.NotFound("message")
		}
		out = cloneMessage(m)
		return nil
	})
	return out, err
}

// MessageDetails reads a message of an account, its thread and the
// thread's participants.
func (r *Repos) MessageDetails(ctx context.Context, accountID, id string) (appmessaging.MessageDetails, error) {
	var out appmessaging.MessageDetails
	err := r.read(ctx, func(t *tables) error {
		m, ok := t.messages[id]
		th, found := t.threads[m.ThreadID]
		if !ok || !found || m.AccountID != accountID {
			return failure.NotFound("message")
		}
		out = appmessaging.MessageDetails{Message: cloneMessage(m), Thread: cloneThread(th.Thread),
			Participants: append(make([]messaging.Participant, 0), t.participants[th.ID]...)}
		return nil
	})
	return out, err
}

// RecentMessages returns a thread's newest messages, newest first, if the
// thread is the account's.
func (r *Repos) RecentMessages(ctx context.Context, accountID, threadID string, limit int) ([]messaging.Message, error) {
	var out []messaging.Message
	err := r.read(ctx, func(t *tables) error { out = t.messagePage(accountID, threadID, nil, max(limit, 0)); return nil })
	return out, err
}

// ThreadMessages returns up to limit messages of a thread of the account,
// newest first, older than before when it is set.
func (r *Repos) ThreadMessages(ctx context.Context, accountID, threadID string, before *appmessaging.MessageCursor, limit int) ([]messaging.Message, error) {
	var out []messaging.Message
	err := r.read(ctx, func(t *tables) error { out = t.messagePage(accountID, threadID, before, max(limit, 0)); return nil })
	return out, err
}

// messagePage is up to limit (when not negative) messages of a thread of
// the account, newest first, older than before when it is set.
func (t *tables) messagePage(accountID, threadID string, before *appmessaging.MessageCursor, limit int) []messaging.Message {
	rows := sorted(t.messages, func(m messaging.Message) bool {
		if m.ThreadID != threadID || m.AccountID != accountID {
			return false
		}
		return before == nil || m.CreatedAt.Before(before.CreatedAt) || (m.CreatedAt.Equal(before.CreatedAt) && m.ID < before.ID)
	}, newestFirst)
	return mapped(window(rows, 0, limit), cloneMessage)
}

// MessagesToDeliver reads messages with their thread's type and sending
// number; ids that do not exist, or whose thread does not, are left out.
func (r *Repos) MessagesToDeliver(ctx context.Context, ids []string) ([]appmessaging.Deliverable, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var out []appmessaging.Deliverable
	err := r.read(ctx, func(t *tables) error {
		out = make([]appmessaging.Deliverable, 0, len(ids))
		for _, id := range unique(ids) {
			m, ok := t.messages[id]
			th, found := t.threads[m.ThreadID]
			if !ok || !found || th.AccountID != m.AccountID {
				continue
			}
			d := appmessaging.Deliverable{Message: cloneMessage(m), ThreadType: th.Type}
			if n := t.numberByAddress(m.Service, m.From); n != nil {
				d.Number, d.NumberFound = cloneNumber(*n), true
			}
			out = append(out, d)
		}
		return nil
	})
	return out, err
}

// unique is ids without repeats, in order: what an IN list matches.
func unique(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// upsertContact records a user, keeping the newest non-empty name.
func (t *tables) upsertContact(accountID string, service account.Service, address, name string, at time.Time) error {
	if err := t.needAccount(accountID); err != nil {
		return err
	}
	key := [3]string{accountID, string(service), address}
	c, ok := t.contacts[key]
	if !ok {
		c.createdAt = utc(at)
	}
	if name != "" || !ok {
		c.name = name
	}
	c.updatedAt = utc(at)
	t.contacts[key] = c
	return nil
}

// Group reads a group thread of the account with its members.
func (r *Repos) Group(ctx context.Context, accountID, threadID string) (messaging.GroupState, error) {
	return r.group(ctx, func(th threadRow) bool { return th.ID == threadID && th.AccountID == accountID })
}

// GroupByInviteCode finds a group of the account by its invite code.
func (r *Repos) GroupByInviteCode(ctx context.Context, accountID, code string) (messaging.GroupState, error) {
	return r.group(ctx, func(th threadRow) bool { return code != "" && th.inviteCode == code && th.AccountID == accountID })
}

// group reads the group thread that match says.
func (r *Repos) group(ctx context.Context, match func(threadRow) bool) (messaging.GroupState, error) {
	var out messaging.GroupState
	err := r.read(ctx, func(t *tables) error {
		for _, th := range t.threads {
			if th.Type == messaging.Group && match(th) {
				out = messaging.GroupState{
					Thread: cloneThread(th.Thread), Description: th.description, PictureURL: th.pictureURL,
					InviteCode: th.inviteCode, Announcement: th.announcement, Locked: th.locked,
					Members: append(make([]messaging.Participant, 0), t.participants[th.ID]...),
				}
				return nil
			}
		}
		return failure.NotFound("group")
	})
	return out, err
}

// insertGroup stores a new group thread and its members.
func (t *tables) insertGroup(g messaging.GroupState) error {
	if err := t.insertThread(g.Thread, g.Members); err != nil {
		return err
	}
	return t.saveGroupColumns(g)
}

// saveGroup writes a group's state and its members: members who stay
// keep their name, and take their new roles.
func (t *tables) saveGroup(g messaging.GroupState) error {
	if err := t.saveGroupColumns(g); err != nil {
		return err
	}
	current := map[string]messaging.Participant{}
	for _, p := range t.participants[g.Thread.ID] {
		current[p.Address] = p
	}
	members := make([]messaging.Participant, len(g.Members))
	for i, m := range g.Members {
		if c, stays := current[m.Address]; stays {
			m.Name = c.Name
		}
		members[i] = m
	}
	t.setParticipants(g.Thread.ID, members)
	return nil
}

// saveGroupColumns writes a group's own columns; NotFound when it is not a
// group, Conflict when its invite code is another group's.
func (t *tables) saveGroupColumns(g messaging.GroupState) error {
	th, ok := t.threads[g.Thread.ID]
	if !ok || th.Type != messaging.Group {
		return failure.NotFound("group")
	}
	if g.InviteCode != "" {
		for _, o := range t.threads {
			if o.ID != th.ID && o.inviteCode == g.InviteCode {
				return taken("group")
			}
		}
	}
	th.Name, th.description, th.pictureURL, th.inviteCode = g.Thread.Name, g.Description, g.PictureURL, g.InviteCode
	th.announcement, th.locked, th.UpdatedAt = g.Announcement, g.Locked, utc(g.Thread.UpdatedAt)
	t.threads[th.ID] = th
	return nil
}

// ThreadPage reads one page of an account's threads, most recently active
// first.
func (r *Repos) ThreadPage(ctx context.Context, q appmessaging.ThreadPageQuery) ([]appmessaging.PagedThread, error) {
	var out []appmessaging.PagedThread
	err := r.read(ctx, func(t *tables) error {
		f := q.Filter
		rows := sorted(t.threads, func(th threadRow) bool {
			switch {
			case th.AccountID != q.AccountID,
				f.Service != "" && th.Service != f.Service,
				f.Type != "" && th.Type != f.Type,
				f.Phone != "" && !t.takesPart(th, f.Phone):
				return false
			}
			c := q.After
			return c == nil || th.activity().Before(c.Activity) || (th.activity().Equal(c.Activity) && th.ID < c.ID)
		}, mostRecentFirst)
		out = mapped(window(rows, 0, unbounded(q.Limit)), func(th threadRow) appmessaging.PagedThread {
			return appmessaging.PagedThread{Thread: cloneThread(th.Thread), Cursor: appmessaging.ThreadCursor{Activity: th.activity(), ID: th.ID}}
		})
		return nil
	})
	return out, err
}

// ThreadsByID reads the account's threads among ids.
func (r *Repos) ThreadsByID(ctx context.Context, accountID string, ids []string) ([]messaging.Thread, error) {
	var out []messaging.Thread
	err := r.read(ctx, func(t *tables) error {
		out = make([]messaging.Thread, 0, len(ids))
		for _, id := range unique(ids) {
			if th, ok := t.threads[id]; ok && th.AccountID == accountID {
				out = append(out, cloneThread(th.Thread))
			}
		}
		return nil
	})
	return out, err
}

// ParticipantsOf reads the members of the account's threads among
// threadIDs; threads without members are absent.
func (r *Repos) ParticipantsOf(ctx context.Context, accountID string, threadIDs []string) (map[string][]messaging.Participant, error) {
	var out map[string][]messaging.Participant
	err := r.read(ctx, func(t *tables) error {
		out = make(map[string][]messaging.Participant, len(threadIDs))
		for _, id := range threadIDs {
			if th, ok := t.threads[id]; ok && th.AccountID == accountID && len(t.participants[id]) > 0 {
				out[id] = slices.Clone(t.participants[id])
			}
		}
		return nil
	})
	return out, err
}

// MessagePages reads up to limit messages of each of the account's threads
// among threadIDs, newest first; threads without any are absent.
func (r *Repos) MessagePages(ctx context.Context, accountID string, threadIDs []string, before *appmessaging.MessageCursor, limit int) (map[string][]messaging.Message, error) {
	var out map[string][]messaging.Message
	err := r.read(ctx, func(t *tables) error {
		out = make(map[string][]messaging.Message, len(threadIDs))
		for _, id := range unique(threadIDs) {
			if page := t.messagePage(accountID, id, before, max(limit, 0)); len(page) > 0 {
				out[id] = page
			}
		}
		return nil
	})
	return out, err
}

// MessagesByID reads the account's messages among ids.
func (r *Repos) MessagesByID(ctx context.Context, accountID string, ids []string) ([]messaging.Message, error) {
	var out []messaging.Message
	err := r.read(ctx, func(t *tables) error {
		out = make([]messaging.Message, 0, len(ids))
		for _, id := range unique(ids) {
			if m, ok := t.messages[id]; ok && m.AccountID == accountID {
				out = append(out, cloneMessage(m))
			}
		}
		return nil
	})
	return out, err
}

// MessagingStore is the messaging use cases' store (messaging.Store), as store.DB.MessagingStore is.
func (db *DB) MessagingStore() appmessaging.Store {
	return decidingStore[appmessaging.Repos, appmessaging.TxReads]{
		bound: bound[appmessaging.Repos]{db: db, view: func(r *Repos) appmessaging.Repos { return r }},
		reads: func(r *Repos) appmessaging.TxReads { return r },
	}
}

// MessageEvents reads, oldest first, up to limit message.sent and
// message.status events of the account's thread about the messages ids,
// recorded at or after since.
func (r *Repos) MessageEvents(ctx context.Context, accountID, threadID string, ids []string, since time.Time, limit int) ([]event.Event, error) {
	var out []event.Event
	err := r.read(ctx, func(t *tables) error {
		out = make([]event.Event, 0)
		for _, e := range t.eventLog() {
			if e.AccountID != accountID || e.ThreadID != threadID || e.CreatedAt.Before(since) ||
				(e.Type != event.MessageSent && e.Type != event.MessageStatus) {
				continue
			}
			if !slices.ContainsFunc(ids, func(id string) bool { return strings.Contains(string(e.Payload), `"message_id":"`+id+`"`) }) {
				continue
			}
			out = append(out, cloneEvent(e.Event))
			if len(out) == limit {
				break
			}
		}
		return nil
	})
	return out, err
}
