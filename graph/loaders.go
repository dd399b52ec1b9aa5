package graph

import (
	"context"
	"sync"
	"time"

	"github.com/graph-gophers/dataloader/v7"

	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
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

	mu sync.Mutex
	// siblings maps a thread listed in a page to the ids of that page:
	// when one of them needs its participants or messages, all of them are
	// read in the same statement.
	siblings map[string][]string
	// extraParticipants and extraPages hold what was read for siblings
	// before they asked.
	extraParticipants map[string][]messaging.Participant
	extraPages        map[pageKey]appmessaging.MessagePage
}

func newLoaders(accountID string, reader ThreadReader) *loaders {
	l := &loaders{
		accountID: accountID, reader: reader,
		siblings:          map[string][]string{},
		extraParticipants: map[string][]messaging.Participant{},
		extraPages:        map[pageKey]appmessaging.MessagePage{},
	}
	l.threads = dataloader.NewBatchedLoader(l.loadThreads, dataloader.WithWait[string, *messaging.Thread](loaderWait))
	l.participants = dataloader.NewBatchedLoader(l.loadParticipants, dataloader.WithWait[string, []messaging.Participant](loaderWait))
	l.messages = dataloader.NewBatchedLoader(l.loadMessages, dataloader.WithWait[pageKey, appmessaging.MessagePage](loaderWait))
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
// messages are read together.
func (l *loaders) listed(ids []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		l.siblings[id] = ids
	}
}

// widen returns keys together with every sibling of theirs that has
// not been read yet (per have), each once.
func (l *loaders) widen(keys []string, have func(id string) bool) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := make(map[string]bool, len(keys))
	out := make([]string, 0, len(keys))
	add := func(id string) {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	for _, k := range keys {
		add(k)
	}
	for _, k := range keys {
		for _, s := range l.siblings[k] {
			if !have(s) {
				add(s)
			}
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

func (l *loaders) loadParticipants(ctx context.Context, ids []string) []*dataloader.Result[[]messaging.Participant] {
	out := make([]*dataloader.Result[[]messaging.Participant], len(ids))
	var missing []string
	l.mu.Lock()
	for i, id := range ids {
		if ps, ok := l.extraParticipants[id]; ok {
			out[i] = &dataloader.Result[[]messaging.Participant]{Data: ps}
		} else {
			missing = append(missing, id)
		}
	}
	l.mu.Unlock()
	if len(missing) == 0 {
		return out
	}
	wide := l.widen(missing, func(id string) bool {
		_, ok := l.extraParticipants[id]
		return ok
	})
	found, err := l.reader.Participants(ctx, l.accountID, wide)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil {
		for _, id := range wide {
			l.extraParticipants[id] = found[id]
		}
	}
	for i, id := range ids {
		if out[i] != nil {
			continue
		}
		if err != nil {
			out[i] = &dataloader.Result[[]messaging.Participant]{Error: err}
		} else {
			out[i] = &dataloader.Result[[]messaging.Participant]{Data: found[id]}
		}
	}
	return out
}

func (l *loaders) loadMessages(ctx context.Context, keys []pageKey) []*dataloader.Result[appmessaging.MessagePage] {
	out := make([]*dataloader.Result[appmessaging.MessagePage], len(keys))
	// One read per distinct page request (first, after); usually one.
	type args struct {
		first  int
		before appmessaging.MessageCursor
		hasCur bool
	}
	groups := map[args][]int{}
	l.mu.Lock()
	for i, k := range keys {
		if p, ok := l.extraPages[k]; ok {
			out[i] = &dataloader.Result[appmessaging.MessagePage]{Data: p}
			continue
		}
		a := args{k.first, k.before, k.hasCur}
		groups[a] = append(groups[a], i)
	}
	l.mu.Unlock()
	for a, idx := range groups {
		ids := make([]string, len(idx))
		for j, i := range idx {
			ids[j] = keys[i].threadID
		}
		if !a.hasCur {
			// A cursor belongs to one thread; only first pages are
			// shared with siblings.
			ids = l.widen(ids, func(id string) bool {
				_, ok := l.extraPages[pageKey{threadID: id, first: a.first}]
				return ok
			})
		}
		var before *appmessaging.MessageCursor
		if a.hasCur {
			b := a.before
			before = &b
		}
		pages, err := l.reader.MessagePages(ctx, l.accountID, ids, before, a.first)
		l.mu.Lock()
		if err == nil {
			for _, id := range ids {
				l.extraPages[pageKey{threadID: id, first: a.first, before: a.before, hasCur: a.hasCur}] = pages[id]
			}
		}
		l.mu.Unlock()
		for _, i := range idx {
			if err != nil {
				out[i] = &dataloader.Result[appmessaging.MessagePage]{Error: err}
			} else {
				out[i] = &dataloader.Result[appmessaging.MessagePage]{Data: pages[keys[i].threadID]}
			}
		}
	}
	return out
}
