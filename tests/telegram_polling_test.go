package tests

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/telegram/telegramfake"
	"github.com/switchboard-dev/switchboard/adapters/store"
)

// The log lines of a replica that takes and loses a bot's poll lease.
const (
	leaseTaken = `msg="telegram: poll lease taken"`
	leaseLost  = `msg="telegram: poll lease lost"`
)

// pollTakeOverBound is the documented bound: another replica polls a bot
// within 10 s of its poller's death or stall.
const pollTakeOverBound = 10 * time.Second

// Three replicas on one Postgres database poll a bot in polling mode: one
// polls at a time (Telegram ends a second caller's getUpdates with 409,
// and the fake does too). The fake feeds updates all along. The polling
// replica is killed with SIGKILL: another takes over within 10 s. That
// one is then stalled (SIGSTOP): the database ends its lease session, the
// third takes over within 10 s, and the stalled one, resumed, finds its
// lease lost. Every update reaches the customer's webhook exactly once.
func TestTelegramPollingFailsOverBetweenReplicas(t *testing.T) {
	t.Parallel()
	b := setup(t, store.Postgres)
	tg := telegramfake.New(t, chTGToken)
	acct := b.createAccount(t, "Polling")
	var num numberOut
	b.cliJSON(t, &num, "numbers", "add", "--account", acct.AccountID, "--number", chTGAgent,
		"--service", "telegram", "--provider", "telegram", "--bot-token", chTGToken,
		"--api-base-url", tg.URL, "--inbound", "polling")
	hooks := newHookReceiver(t)
	var hook webhookOut
	b.cliJSON(t, &hook, "webhook", "set", "--account", acct.AccountID, "--url", hooks.URL, "--allow-private-urls", "127.0.0.1/32")
	hooks.setSecret(t, hook.Secret)

	replicas := make([]*serverProc, 3)
	for i := range replicas {
		replicas[i] = launchServer(t, b.env, "--database-url", b.dbURL, "--allow-private-urls", "127.0.0.1/32")
	}
	for _, r := range replicas {
		r.waitListening(t)
	}

	// The feed: a private text every 40 ms until stopped, from 50 users
	// in turn (events of one thread reach the webhook in order, one
	// after the other).
	var (
		mu   sync.Mutex
		fed  []string
		stop = make(chan struct{})
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		for i := int64(1); ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(40 * time.Millisecond):
			}
			text := fmt.Sprintf("update %d", i)
			tg.Queue(telegramfake.PrivateText(1000+i, i, 777000100+i%50, "", "Alice", text))
			mu.Lock()
			fed = append(fed, text)
			mu.Unlock()
		}
	}()

	// holders are the live replicas that took the lease n times or more.
	taken := func(r *serverProc) int { return strings.Count(r.stderr.String(), leaseTaken) }
	holders := func(alive []*serverProc, n int) []*serverProc {
		var out []*serverProc
		for _, r := range alive {
			if taken(r) >= n {
				out = append(out, r)
			}
		}
		return out
	}
	require.Eventually(t, func() bool { return len(holders(replicas, 1)) > 0 }, chWait, chTick, "a replica polls")
	time.Sleep(3 * time.Second) // a few rounds of lease claims
	first := holders(replicas, 1)
	require.Len(t, first, 1, "exactly one replica polls")
	require.Zero(t, tg.Conflicts(), "no getUpdates ended another")

	// The poller dies.
	first[0].signal(t, syscall.SIGKILL)
	first[0].waitExit(t, exitTimeout)
	killed := time.Now()
	var alive []*serverProc
	for _, r := range replicas {
		if r != first[0] {
			alive = append(alive, r)
		}
	}
	require.Eventually(t, func() bool { return len(holders(alive, 1)) > 0 }, pollTakeOverBound, 20*time.Millisecond,
		"another replica polls within %s of the kill", pollTakeOverBound)
	afterKill := time.Since(killed)
	second := holders(alive, 1)
	require.Len(t, second, 1)
	time.Sleep(time.Second)
	require.Len(t, holders(alive, 1), 1, "still exactly one replica polls")
	require.Zero(t, tg.Conflicts(), "no getUpdates ended another")

	// The poller stalls.
	var third *serverProc
	for _, r := range alive {
		if r != second[0] {
			third = r
		}
	}
	second[0].signal(t, syscall.SIGSTOP)
	stalled := time.Now()
	require.Eventually(t, func() bool { return taken(third) > 0 }, pollTakeOverBound, 20*time.Millisecond,
		"the third replica polls within %s of the stall", pollTakeOverBound)
	afterStall := time.Since(stalled)
	second[0].signal(t, syscall.SIGCONT)
	require.Eventually(t, func() bool { return strings.Contains(second[0].stderr.String(), leaseLost) }, chWait, chTick,
		"the stalled replica, resumed, finds its lease lost")
	time.Sleep(2 * time.Second)
	require.Equal(t, 1, taken(second[0]), "the resumed replica leaves the bot to the third")
	close(stop)
	<-done

	// Every update reaches the webhook, once.
	mu.Lock()
	want := append([]string(nil), fed...)
	mu.Unlock()
	received := func() map[string]int {
		counts := map[string]int{}
		for _, ev := range hooks.all() {
			if ev["event"] == "message.received" {
				counts[fmt.Sprint(ev["content"])]++
			}
		}
		return counts
	}
	require.Eventually(t, func() bool { return len(received()) >= len(want) }, chWait, chTick,
		"every update reaches the webhook: %d of %d", len(received()), len(want))
	counts := received()
	for _, text := range want {
		require.Equal(t, 1, counts[text], "%q reached the webhook once", text)
	}
	require.Len(t, counts, len(want), "nothing but the updates fed")
	db, err := store.Open(context.Background(), b.dbURL, store.Options{})
	require.NoError(t, err)
	defer db.Close()
	var stored int
	require.NoError(t, db.Bun().NewRaw("SELECT count(*) FROM messages WHERE direction = 'inbound'").Scan(context.Background(), &stored))
	require.Equal(t, len(want), stored, "each update is stored once")
	t.Logf("%d updates; taken over %s after the kill, %s after the stall; %d getUpdates ended by another (after the stall)",
		len(want), afterKill.Round(10*time.Millisecond), afterStall.Round(10*time.Millisecond), tg.Conflicts())
}
