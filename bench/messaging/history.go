package messaging

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/bench/harness"
	"golang.org/x/sync/errgroup"
)

// History measures paging through a thread's full history (GET get-messages) as the
// history grows: the same two fetches, page 1 and a page next to the oldest message,
// on a thread of Large messages and on one of Small, in one deployment and in the
// same slices. Paging by keyset costs the same at any depth and in any thread size;
// paging by OFFSET, or a cursor that filters instead of seeking, costs more the
// deeper the page and the larger the thread, which the p99 ratios large/small show.
//
// Each of the four fetches (two threads × two pages) has Clients closed-loop clients
// of its own, all four running at once, so the machine's drift hits them alike. The
// deep page's cursor is one the API issued: the oldest 2 × Limit messages of each
// thread are seeded first, page 1 of Limit is read through the API, and its
// next_cursor, which then points at the oldest Limit messages, stays valid while the
// newer messages are seeded behind it. Set-up checks that the two pages hold the
// newest and the oldest messages. The server serves the API only (--jobs=false).
type History struct {
	// Clients is the number of concurrent clients of each fetch.
	Clients int
	// Large and Small are the two threads' sizes.
	Large, Small int
	// Limit is the page size asked for.
	Limit int
	// MaxConns is the server's pool (--db-max-conns); 0 keeps the server's default.
	MaxConns int
	// P99Ratio is the largest acceptable p99 of a fetch on the large thread over
	// the p99 of the same fetch on the small one.
	P99Ratio float64
}

// historyFetch is one of the four measured fetches.
type historyFetch struct {
	name string
	url  string
	// latencies of every round, for the follow-up's percentiles.
	mu        sync.Mutex
	latencies []time.Duration
}

// Setup provisions the deployment, seeds the two threads (bulk SQL through psql,
// untimed), obtains the deep cursors and returns the slice.
func (h History) Setup(ctx context.Context, env *harness.Env) (harness.Slice, error) {
	d, db, err := historyDeployment(ctx, env)
	if err != nil {
		return nil, err
	}
	var flags []string
	if h.MaxConns > 0 {
		flags = append(flags, "--db-max-conns", strconv.Itoa(h.MaxConns))
	}
	sb, err := d.Serve(ctx, append(flags, "--jobs=false")...)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	// Thread 0 holds messages 1 … Large, thread 1 the next Small; message i is i
	// milliseconds younger than from, so each thread's messages are in id order.
	threads := []struct {
		name        string
		first, last int
	}{
		{fmt.Sprintf("%d-message thread", h.Large), 1, h.Large},
		{fmt.Sprintf("%d-message thread", h.Small), h.Large + 1, h.Large + h.Small},
	}
	from := start.Add(-time.Duration(h.Large+h.Small) * time.Millisecond)
	if err := seedThreads(ctx, db, d.AccountID, len(threads), "0", start); err != nil {
		return nil, err
	}
	base := sb.URL + "/v1/messages/threads/" + sb.AccountID + "/get-messages/"
	limit := "?limit=" + strconv.Itoa(h.Limit)
	var fetches []*historyFetch
	for k, th := range threads {
		// In the thread's index expression, k is a constant: every message of
		// the range goes into thread k.
		thread := strconv.Itoa(k)
		if err := seedHistory(ctx, db, th.first, th.first+2*h.Limit-1, thread, from); err != nil {
			return nil, err
		}
		page1 := base + seqID("thr", k) + limit
		var first historyPage
		if err := harness.CallAPI(ctx, http.MethodGet, page1, sb.Header(), nil, &first); err != nil {
			return nil, err
		}
		if first.NextCursor == nil {
			return nil, fmt.Errorf("%s: page 1 of %d messages has no next_cursor", th.name, 2*h.Limit)
		}
		deep := page1 + "&before=" + url.QueryEscape(*first.NextCursor)
		const chunk = 250_000
		for lo := th.first + 2*h.Limit; lo <= th.last; lo += chunk {
			hi := min(lo+chunk-1, th.last)
			if err := seedHistory(ctx, db, lo, hi, thread, from); err != nil {
				return nil, err
			}
			env.Log.Info("seeding messages", "thread", th.name, "done", hi-th.first+1)
		}
		// The pages must hold what they claim: the newest messages, and the
		// oldest ones.
		if err := checkPage(ctx, sb, page1, th.last, h.Limit); err != nil {
			return nil, fmt.Errorf("%s, page 1: %w", th.name, err)
		}
		if err := checkPage(ctx, sb, deep, th.first+h.Limit-1, h.Limit); err != nil {
			return nil, fmt.Errorf("%s, deep page: %w", th.name, err)
		}
		fetches = append(fetches,
			&historyFetch{name: "page 1, " + th.name, url: page1},
			&historyFetch{name: "deep page, " + th.name, url: deep})
	}
	if err := db.Exec(ctx, "VACUUM (ANALYZE) threads, thread_participants, contacts, messages"); err != nil {
		return nil, err
	}
	env.Log.Info("history seeded", "threads", len(threads), "took", time.Since(start).Round(time.Millisecond))
	loads := make([]*harness.HTTPLoad, len(fetches))
	for i, f := range fetches {
		loads[i] = harness.NewLeanHTTPLoad(h.Clients, harness.Get(f.url, sb.Header()))
	}
	env.AfterRounds(h.figures(fetches))
	return func(ctx context.Context, d time.Duration) (harness.Sample, error) {
		samples := make([]harness.Sample, len(loads))
		g, gctx := errgroup.WithContext(ctx)
		for i, l := range loads {
			g.Go(func() (err error) {
				samples[i], err = l.Run(gctx, d)
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return harness.Sample{}, err
		}
		for i, s := range samples {
			f := fetches[i]
			f.mu.Lock()
			f.latencies = append(f.latencies, s.Latencies...)
			f.mu.Unlock()
			if s.FirstFailure != "" {
				samples[i].FirstFailure = f.name + ": " + s.FirstFailure
			}
		}
		return harness.Concurrent(samples), nil
	}, nil
}

// historyDeployment provisions a deployment with agent number 0 (sandbox) for a
// history seeded with SQL, and opens its psql session.
func historyDeployment(ctx context.Context, env *harness.Env) (*harness.Deployment, *harness.SQL, error) {
	d, err := env.NewDeployment(ctx)
	if err != nil {
		return nil, nil, err
	}
	if _, err := d.AddNumber(ctx, agentNumber(0), service, "sandbox"); err != nil {
		return nil, nil, err
	}
	db, err := d.SQL()
	if err != nil {
		return nil, nil, err
	}
	return d, db, nil
}

// historyPage is what the bench reads of a page of get-messages.
type historyPage struct {
	Data []struct {
		MessageID string `json:"message_id"`
	} `json:"data"`
	NextCursor *string `json:"next_cursor"`
}

// checkPage checks that the page at url holds limit messages, newest first, the
// first being seeded message newest.
func checkPage(ctx context.Context, sb *harness.Switchboard, url string, newest, limit int) error {
	var page historyPage
	if err := harness.CallAPI(ctx, http.MethodGet, url, sb.Header(), nil, &page); err != nil {
		return err
	}
	if len(page.Data) != limit {
		return fmt.Errorf("%d messages, want %d", len(page.Data), limit)
	}
	for j, m := range page.Data {
		if want := seqID("msg", newest-j); m.MessageID != want {
			return fmt.Errorf("message %d is %s, want %s", j, m.MessageID, want)
		}
	}
	return nil
}

// figures reports each fetch's p99 over all rounds and, for page 1 and for the deep
// page, the p99 on the large thread over the p99 on the small one, whose target is
// P99Ratio. fetches holds each page of thread 0, then each of thread 1.
func (h History) figures(fetches []*historyFetch) harness.FollowUp {
	return func(context.Context, harness.Rounds) []harness.Figure {
		p99 := make([]float64, len(fetches))
		var out []harness.Figure
		for i, f := range fetches {
			f.mu.Lock()
			l := harness.LatencyOf(f.latencies)
			f.mu.Unlock()
			if l == nil {
				out = append(out, harness.Figure{Name: f.name + " p99", Error: "no fetch succeeded"})
				continue
			}
			p99[i] = l.P99ms
			out = append(out, harness.Figure{Name: f.name + " p99", Value: l.P99ms, Unit: "ms",
				Detail: fmt.Sprintf("%d fetches of %d messages; p50 %.2f ms", l.Count, h.Limit, l.P50ms)})
		}
		pages := len(fetches) / 2
		for i := range pages {
			large, small := p99[i], p99[pages+i]
			limit := h.P99Ratio
			name := []string{"page 1", "deep page"}[i]
			if large <= 0 || small <= 0 {
				out = append(out, harness.Figure{Name: name + " p99 ratio", Error: "a thread had no successful fetch"})
				continue
			}
			out = append(out, harness.Figure{Name: name + " p99 ratio", Value: large / small, Unit: "x", Max: &limit,
				Detail: fmt.Sprintf("p99 on the %d-message thread over the p99 on the %d-message one", h.Large, h.Small)})
		}
		return out
	}
}
