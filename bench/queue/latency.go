package queue

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	runner "github.com/switchboard-dev/switchboard/adapters/jobs"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/bench/harness"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// Latency measures how long a committed job waits for its handler to start, on a
// queue with a light steady load: one producer commits one job per transaction every
// Interval while a runner, up for the whole scenario, serves them.
//
// The commit time of a job is taken right after Transact returns, which is after the
// commit, and kept in a map keyed by the job's id (the payload is written before the
// commit, so it cannot carry it); the handler notes time.Now() when it starts. The
// latency is start minus commit time. The runner may hear of a job before Transact
// has returned to the producer; such a job's latency is counted as 0.
//
// After its last enqueue a slice waits up to StartTimeout for its jobs to start; a
// job that has not started by then counts as a failure, not as a latency.
type Latency struct {
	// Interval is the time between enqueues.
	Interval time.Duration
	// Runner tunes the runner; its Logger defaults to the run's.
	Runner runner.Config
	// StartTimeout bounds the wait for a slice's last jobs to start.
	StartTimeout time.Duration
}

// Setup opens the scenario's database, starts the runner, stopped when the scenario
// ends, and returns the latency slice.
func (l Latency) Setup(ctx context.Context, env *harness.Env) (harness.Slice, error) {
	if l.Interval <= 0 || l.StartTimeout <= 0 {
		return nil, fmt.Errorf("want Interval and StartTimeout above 0, have %s and %s", l.Interval, l.StartTimeout)
	}
	db, err := openDB(ctx, env, 0)
	if err != nil {
		return nil, err
	}
	cfg := l.Runner
	if cfg.Logger == nil {
		cfg.Logger = env.Log
	}
	starts := &startTimes{m: map[int64]time.Time{}}
	r, err := runner.New(db.Repos(), db, cfg, runner.Kind{
		Name: Kind,
		Handler: runner.HandlerFunc(func(_ context.Context, job jobs.Job) error {
			starts.note(job.ID, time.Now())
			return nil
		}),
	})
	if err != nil {
		return nil, err
	}
	if err := r.Start(ctx); err != nil {
		return nil, err
	}
	env.AfterScenario(func() {
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		defer cancel()
		if err := r.Stop(ctx); err != nil {
			env.Log.Warn("stop job runner", "err", err)
		}
	})
	p := &prober{Latency: l, db: db, starts: starts}
	return p.slice, nil
}

type prober struct {
	Latency
	db     *store.DB
	starts *startTimes
}

func (p *prober) slice(ctx context.Context, d time.Duration) (harness.Sample, error) {
	commits := map[int64]time.Time{}
	var t tally
	tick := time.NewTicker(p.Interval)
	defer tick.Stop()
	start := time.Now()
	deadline := start.Add(d)
	for {
		select {
		case <-ctx.Done():
			return harness.Sample{}, ctx.Err()
		case <-tick.C:
		}
		if !time.Now().Before(deadline) {
			break
		}
		id, err := enqueueOne(ctx, p.db)
		committed := time.Now()
		if ctx.Err() != nil {
			return harness.Sample{}, ctx.Err()
		}
		if err != nil {
			t.add(err)
			continue
		}
		commits[id] = committed
	}
	elapsed := time.Since(start)

	started, err := p.starts.await(ctx, commits, p.StartTimeout)
	if err != nil {
		return harness.Sample{}, err
	}
	lat, missing := latencies(commits, started)
	s := harness.Sample{Ops: len(lat), Elapsed: elapsed, Latencies: lat, Failed: t.failed + len(missing), FirstFailure: t.first}
	if s.FirstFailure == "" && len(missing) > 0 {
		s.FirstFailure = fmt.Sprintf("%d jobs (first id %d) had not started %s after the slice's last enqueue", len(missing), missing[0], p.StartTimeout)
	}
	return s, nil
}

// startTimes holds when the handler started each job, until a slice takes them.
type startTimes struct {
	mu sync.Mutex
	m  map[int64]time.Time
}

func (s *startTimes) note(id int64, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, seen := s.m[id]; !seen { // a re-run of a job does not move its first start
		s.m[id] = t
	}
}

// await waits until every job of commits has started or timeout has passed, then
// removes and returns the start times of those that did.
func (s *startTimes) await(ctx context.Context, commits map[int64]time.Time, timeout time.Duration) (map[int64]time.Time, error) {
	deadline := time.Now().Add(timeout)
	for !s.all(commits) && time.Now().Before(deadline) {
		if err := sleep(ctx, 2*time.Millisecond); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int64]time.Time, len(commits))
	for id := range commits {
		if t, ok := s.m[id]; ok {
			out[id] = t
			delete(s.m, id)
		}
	}
	return out, nil
}

func (s *startTimes) all(commits map[int64]time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := range commits {
		if _, ok := s.m[id]; !ok {
			return false
		}
	}
	return true
}

// latencies pairs each committed job with its start: start minus commit, or 0 when
// the handler started before the producer saw its commit return. It returns the
// latencies and, in ascending order, the ids of jobs with no start.
func latencies(commits, starts map[int64]time.Time) ([]time.Duration, []int64) {
	var lat []time.Duration
	var missing []int64
	for id, committed := range commits {
		started, ok := starts[id]
		if !ok {
			missing = append(missing, id)
			continue
		}
		lat = append(lat, max(started.Sub(committed), 0))
	}
	slices.Sort(missing)
	return lat, missing
}
