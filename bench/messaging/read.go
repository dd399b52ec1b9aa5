package messaging

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/switchboard-dev/switchboard/bench/harness"
)

// Read measures reads of a large message history through the real server: Clients
// concurrent HTTP clients in a closed loop alternate GET get-details of a random
// message and GET get-recent of a random thread. The deployment holds Messages
// messages in Threads threads of one agent number, half received and half delivered,
// seeded once per run by bulk SQL through psql (untimed), then vacuumed and analysed as autovacuum
// would. The server serves the API only (--jobs=false): there is nothing to deliver.
// After the rounds, one slice more measures the CPU per request of the server and of
// Postgres (harness.CPUFigure).
type Read struct {
	// Clients is the number of concurrent clients.
	Clients int
	// Messages and Threads size the history.
	Messages int
	Threads  int
	// MaxConns is the server's pool (--db-max-conns); 0 keeps the server's default.
	MaxConns int
}

// Setup provisions the deployment, seeds the history and returns the read slice.
func (rd Read) Setup(ctx context.Context, env *harness.Env) (harness.Slice, error) {
	d, db, err := historyDeployment(ctx, env)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	now := start
	if err := seedThreads(ctx, db, d.AccountID, rd.Threads, "0", now); err != nil {
		return nil, err
	}
	// In chunks, so that no single statement holds a million rows' worth of
	// trigger and sort memory, and progress shows in the log.
	const chunk = 250_000
	for first := 1; first <= rd.Messages; first += chunk {
		last := min(first+chunk-1, rd.Messages)
		if err := seedHistory(ctx, db, first, last, fmt.Sprintf("i %% %d", rd.Threads), now.Add(-time.Duration(rd.Messages)*time.Millisecond)); err != nil {
			return nil, err
		}
		env.Log.Info("seeding messages", "done", last, "of", rd.Messages)
	}
	if err := db.Exec(ctx, "VACUUM (ANALYZE) threads, thread_participants, contacts, messages"); err != nil {
		return nil, err
	}
	env.Log.Info("history seeded", "messages", rd.Messages, "threads", rd.Threads, "took", time.Since(start).Round(time.Millisecond))
	var flags []string
	if rd.MaxConns > 0 {
		flags = append(flags, "--db-max-conns", strconv.Itoa(rd.MaxConns))
	}
	sb, err := d.Serve(ctx, append(flags, "--jobs=false")...)
	if err != nil {
		return nil, err
	}
	base := sb.URL + "/v1/messages/"
	details := base + "individual/" + sb.AccountID + "/get-details/"
	recent := base + "threads/" + sb.AccountID + "/get-recent/"
	header := sb.Header()
	var n atomic.Uint64
	next := func(ctx context.Context) (*http.Request, error) {
		url := details + seqID("msg", 1+rand.IntN(rd.Messages))
		if n.Add(1)%2 == 0 {
			url = recent + seqID("thr", rand.IntN(rd.Threads))
		}
		return harness.Get(url, header)(ctx)
	}
	load := harness.NewLeanHTTPLoad(rd.Clients, next).Run
	env.AfterRounds(harness.CPUFollowUp("CPU per request", "request", harness.Metered(sb.PID(), load)))
	return load, nil
}
