package graph

import (
	"context"
	"sync"
	"time"

	"github.com/graph-gophers/dataloader/v7"

	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/cron"
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
	reactions   *dataloader.Loader[string, []messaging.Reaction]
	cron        CronUseCases
	jobSiblings map[string][]string
	readLast    map[string]*future[*cron.Execution]

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

func newLoaders(accountID string, reader ThreadReader, cronUC CronUseCases) *loaders {
	l := &loaders{
		accountID: accountID, reader: reader, cron: cronUC,
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
	l.mu.Lock()
	defer l.mu.Unlock()
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
		for _, s := range l.siblings[id] {
			add(s)
		}
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
	reads, owned := claim(&l.mu, l.readParticipants, l.widen(ids))
	if len(owned) > 0 {
		found, err := l.reader.Participants(ctx, l.accountID, owned)
		for _, id := range owned {
			f := reads[id]
			f.v, f.err = found[id], err
			close(f.done)
		}
	}
	out := make([]*dataloader.Result[[]messaging.Participant], len(ids))
	for i, id := range ids {
		v, err := reads[id].wait(ctx)
		out[i] = &dataloader.Result[[]messaging.Participant]{Data: v, Error: err}
	}
	return out
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
	out := make([]*dataloader.Result[*cron.Execution], len(ids))
	if l.cron == nil {
		for i := range out {
			out[i] = &dataloader.Result[*cron.Execution]{Error: errNoCron}
		}
		return out
	}
	l.mu.Lock()
	wide := append([]string(nil), ids...)
	seen := map[string]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	for _, id := range ids {
		for _, s := range l.jobSiblings[id] {
			if !seen[s] {
				seen[s] = true
				wide = append(wide, s)
			}
		}
	}
	l.mu.Unlock()
	reads, owned := claim(&l.mu, l.readLast, wide)
	if len(owned) > 0 {
		found, err := l.cron.LastExecutions(ctx, l.accountID, owned)
		for _, id := range owned {
			f := reads[id]
			if e, ok := found[id]; ok {
				f.v = &e
			}
			f.err = err
			close(f.done)
		}
	}
	for i, id := range ids {
		v, err := reads[id].wait(ctx)
		out[i] = &dataloader.Result[*cron.Execution]{Data: v, Error: err}
	}
	return out
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
