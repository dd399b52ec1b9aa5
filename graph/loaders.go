package graph

import (
	"context"
	"sync"
	"time"

	"github.com/graph-gophers/dataloader/v7"

	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// loaderWait is how long a loader collects keys before it reads them in one
// batch. Batches are completed from the page a thread was listed in (see
// loaders.siblings), so the statement count of a listing does not depend
// on this timing; the wait only merges loads from unrelated places.
const loaderWait = 2 * time.Millisecond

// pageKey asks for one page of one thread's messages.
type pageKey struct {
	threadID string
	first    int
	// before is the decoded after-cursor, as a comparable value.
	before appmessaging.MessageCursor
	hasCur bool
}

// loaders batch the reads of one GraphQL response for one account: threads
// by id, participants and message pages per thread. A new set is made for
// every response, so nothing is cached longer than one response and never
// across accounts.
type loaders struct {
	accountID    string
	reader       ThreadReader
	threads      *dataloader.Loader[string, *messaging.Thread]
	participants *dataloader.Loader[string, []messaging.Participant]
	messages     *dataloader.Loader[pageKey, appmessaging.MessagePage]
	// lastExecutions reads the latest execution of cron jobs; jobs listed
	// together are read together.
	lastExecutions *dataloader.Loader[string, *cron.Execution]
	// timelines read the status history of messages; the messages of a
	// response are read together, one statement per thread.
	timelines *dataloader.Loader[timelineKey, []appmessaging.StatusChange]
	// reactions read the reactions on messages; the messages of a
	// response are read together.
	reactions *dataloader.Loader[string, []messaging.Reaction]
	// attachments read the attachments of received emails; the emails
	// of a listed page are read together (emailSiblings).
	attachments     *dataloader.Loader[string, []email.Attachment]
	email           EmailReader
	emailSiblings   map[string][]string
	readAttachments map[string]*future[[]email.Attachment]
	cron            CronUseCases
	jobSiblings     map[string][]string
	readLast        map[string]*future[*cron.Execution]

	mu sync.Mutex
	// siblings maps a thread listed in a page to the ids of that page:
	// when one of them needs its participants or messages, all of them are
	// read in the same statement.
	siblings map[string][]string
	// readParticipants and readPages hold the reads made or under way for
	// threads, siblings included, so that a later batch waits for a read
	// in flight instead of making its own.
	readParticipants map[string]*future[[]messaging.Participant]
	readPages        map[pageKey]*future[appmessaging.MessagePage]
}

// future is a read in flight or done.
type future[V any] struct {
	done chan struct{}
	v    V
	err  error
}

func (f *future[V]) wait(ctx context.Context) (V, error) {
	select {
	case <-f.done:
		return f.v, f.err
	case <-ctx.Done():
		var zero V
		return zero, ctx.Err()
	}
}

// claim returns the reads of keys, starting (and returning in owned) those
// nobody has started; the caller must resolve every owned one.
func claim[K comparable, V any](mu *sync.Mutex, reads map[K]*future[V], keys []K) (all map[K]*future[V], owned []K) {
	mu.Lock()
	defer mu.Unlock()
	all = make(map[K]*future[V], len(keys))
	for _, k := range keys {
		f, ok := reads[k]
		if !ok {
			f = &future[V]{done: make(chan struct{})}
			reads[k] = f
			owned = append(owned, k)
		}
		all[k] = f
	}
	return all, owned
}

func newLoaders(accountID string, reader ThreadReader, cronUC CronUseCases, emails EmailReader) *loaders {
	l := &loaders{
		accountID: accountID, reader: reader, cron: cronUC, email: emails,
		emailSiblings:    map[string][]string{},
		readAttachments:  map[string]*future[[]email.Attachment]{},
		jobSiblings:      map[string][]string{},
		readLast:         map[string]*future[*cron.Execution]{},
		siblings:         map[string][]string{},
		readParticipants: map[string]*future[[]messaging.Participant]{},
		readPages:        map[pageKey]*future[appmessaging.MessagePage]{},
	}
	l.threads = dataloader.NewBatchedLoader(l.loadThreads, dataloader.WithWait[string, *messaging.Thread](loaderWait))
	l.participants = dataloader.NewBatchedLoader(l.loadParticipants, dataloader.WithWait[string, []messaging.Participant](loaderWait))
	l.messages = dataloader.NewBatchedLoader(l.loadMessages, dataloader.WithWait[pageKey, appmessaging.MessagePage](loaderWait))
	l.lastExecutions = dataloader.NewBatchedLoader(l.loadLastExecutions, dataloader.WithWait[string, *cron.Execution](loaderWait))
	l.timelines = dataloader.NewBatchedLoader(l.loadTimelines, dataloader.WithWait[timelineKey, []appmessaging.StatusChange](loaderWait))
	l.reactions = dataloader.NewBatchedLoader(l.loadReactions, dataloader.WithWait[string, []messaging.Reaction](loaderWait))
	l.attachments = dataloader.NewBatchedLoader(l.loadAttachments, dataloader.WithWait[string, []email.Attachment](loaderWait))
	return l
}

type loadersKey struct{}

func withLoaders(ctx context.Context, l *loaders) context.Context {
	return context.WithValue(ctx, loadersKey{}, l)
}

// loadersFor returns the response's loaders; they exist whenever the
// request carries a principal.
func loadersFor(ctx context.Context) (*loaders, error) {
	if l, ok := ctx.Value(loadersKey{}).(*loaders); ok {
		return l, nil
	}
	return nil, errUnauthenticated
}

// listed records the threads of one page, so that their participants and
// messages are read together, and keeps them for lookups by id (a
// message's thread).
func (l *loaders) listed(ctx context.Context, threads []messaging.Thread) {
	ids := make([]string, len(threads))
	for i := range threads {
		ids[i] = threads[i].ID
		t := threads[i]
		l.threads.Prime(ctx, t.ID, &t)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		l.siblings[id] = ids
	}
}

// widen returns ids together with their siblings, each once.
func (l *loaders) widen(ids []string) []string {
	return withSiblings(&l.mu, l.siblings, ids)
}

// withSiblings returns ids and then their siblings, each once.
func withSiblings(mu *sync.Mutex, siblings map[string][]string, ids []string) []string {
	mu.Lock()
	defer mu.Unlock()
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	add := func(id string) {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	for _, id := range ids {
		add(id)
	}
	for _, id := range ids {
		for _, s := range siblings[id] {
			add(s)
		}
	}
	return out
}

// readOnce answers ids: read is called once with the keys of wide that
// no earlier batch read or is reading, and ids wait for their reads,
// made here or elsewhere.
func readOnce[V any](ctx context.Context, mu *sync.Mutex, reads map[string]*future[V], ids, wide []string, read func(owned []string) (map[string]V, error)) []*dataloader.Result[V] {
	all, owned := claim(mu, reads, wide)
	if len(owned) > 0 {
		found, err := read(owned)
		for _, id := range owned {
			f := all[id]
			f.v, f.err = found[id], err
			close(f.done)
		}
	}
	out := make([]*dataloader.Result[V], len(ids))
	for i, id := range ids {
		v, err := all[id].wait(ctx)
		out[i] = &dataloader.Result[V]{Data: v, Error: err}
	}
	return out
}

// failAll answers n keys with err.
func failAll[V any](n int, err error) []*dataloader.Result[V] {
	out := make([]*dataloader.Result[V], n)
	for i := range out {
		out[i] = &dataloader.Result[V]{Error: err}
	}
	return out
}

func (l *loaders) loadThreads(ctx context.Context, ids []string) []*dataloader.Result[*messaging.Thread] {
	found, err := l.reader.Threads(ctx, l.accountID, ids)
	out := make([]*dataloader.Result[*messaging.Thread], len(ids))
	for i, id := range ids {
		if err != nil {
			out[i] = &dataloader.Result[*messaging.Thread]{Error: err}
			continue
		}
		if t, ok := found[id]; ok {
			out[i] = &dataloader.Result[*messaging.Thread]{Data: &t}
		} else {
			out[i] = &dataloader.Result[*messaging.Thread]{}
		}
	}
	return out
}

func (l *loaders) loadReactions(ctx context.Context, ids []string) []*dataloader.Result[[]messaging.Reaction] {
	found, err := l.reader.Reactions(ctx, l.accountID, ids)
	out := make([]*dataloader.Result[[]messaging.Reaction], len(ids))
	for i, id := range ids {
		out[i] = &dataloader.Result[[]messaging.Reaction]{Data: found[id], Error: err}
	}
	return out
}

func (l *loaders) loadParticipants(ctx context.Context, ids []string) []*dataloader.Result[[]messaging.Participant] {
	return readOnce(ctx, &l.mu, l.readParticipants, ids, l.widen(ids), func(owned []string) (map[string][]messaging.Participant, error) {
		return l.reader.Participants(ctx, l.accountID, owned)
	})
}

func (l *loaders) loadMessages(ctx context.Context, keys []pageKey) []*dataloader.Result[appmessaging.MessagePage] {
	// One read per distinct page request (first, after); usually one.
	type args struct {
		first  int
		before appmessaging.MessageCursor
		hasCur bool
	}
	groups := map[args][]string{}
	for _, k := range keys {
		a := args{k.first, k.before, k.hasCur}
		groups[a] = append(groups[a], k.threadID)
	}
	reads := map[pageKey]*future[appmessaging.MessagePage]{}
	for a, ids := range groups {
		if !a.hasCur {
			// A cursor belongs to one thread; only first pages are
			// shared with siblings.
			ids = l.widen(ids)
		}
		wanted := make([]pageKey, len(ids))
		for i, id := range ids {
			wanted[i] = pageKey{threadID: id, first: a.first, before: a.before, hasCur: a.hasCur}
		}
		all, owned := claim(&l.mu, l.readPages, wanted)
		for k, f := range all {
			reads[k] = f
		}
		if len(owned) == 0 {
			continue
		}
		threadIDs := make([]string, len(owned))
		for i, k := range owned {
			threadIDs[i] = k.threadID
		}
		var before *appmessaging.MessageCursor
		if a.hasCur {
			b := a.before
			before = &b
		}
		pages, err := l.reader.MessagePages(ctx, l.accountID, threadIDs, before, a.first)
		for _, k := range owned {
			f := all[k]
			f.v, f.err = pages[k.threadID], err
			close(f.done)
		}
	}
	out := make([]*dataloader.Result[appmessaging.MessagePage], len(keys))
	for i, k := range keys {
		v, err := reads[k].wait(ctx)
		out[i] = &dataloader.Result[appmessaging.MessagePage]{Data: v, Error: err}
	}
	return out
}

// listedJobs records the cron jobs of one page, so that their last
// executions are read together.
func (l *loaders) listedJobs(jobs []cron.Job) {
	ids := make([]string, len(jobs))
	for i := range jobs {
		ids[i] = jobs[i].ID
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		l.jobSiblings[id] = ids
	}
}

func (l *loaders) loadLastExecutions(ctx context.Context, ids []string) []*dataloader.Result[*cron.Execution] {
	if l.cron == nil {
		return failAll[*cron.Execution](len(ids), errNoCron)
	}
	return readOnce(ctx, &l.mu, l.readLast, ids, withSiblings(&l.mu, l.jobSiblings, ids), func(owned []string) (map[string]*cron.Execution, error) {
		found, err := l.cron.LastExecutions(ctx, l.accountID, owned)
		out := make(map[string]*cron.Execution, len(found))
		for id, e := range found {
			out[id] = &e
		}
		return out, err
	})
}

// timelineKey is what a message's timeline is read by.
type timelineKey struct {
	id, threadID string
	direction    messaging.Direction
	createdAt    time.Time
}

func timelineKeyOf(m messaging.Message) timelineKey {
	return timelineKey{id: m.ID, threadID: m.ThreadID, direction: m.Direction, createdAt: m.CreatedAt}
}

func (l *loaders) loadTimelines(ctx context.Context, keys []timelineKey) []*dataloader.Result[[]appmessaging.StatusChange] {
	msgs := make([]messaging.Message, len(keys))
	for i, k := range keys {
		msgs[i] = messaging.Message{ID: k.id, AccountID: l.accountID, ThreadID: k.threadID, Direction: k.direction, CreatedAt: k.createdAt}
	}
	found, err := l.reader.Timelines(ctx, l.accountID, msgs)
	out := make([]*dataloader.Result[[]appmessaging.StatusChange], len(keys))
	for i, k := range keys {
		steps := found[k.id]
		if steps == nil {
			steps = []appmessaging.StatusChange{}
		}
		out[i] = &dataloader.Result[[]appmessaging.StatusChange]{Data: steps, Error: err}
	}
	return out
}
