package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// keyedSend is one send with an Idempotency-Key and the answer it got, if
// one reached the client before the server died.
type keyedSend struct {
	key       string
	answered  bool
	messageID string
}

// postKeyed sends body with an Idempotency-Key; status 0 with an error when
// no answer came (the server died).
func postKeyed(client *http.Client, url, key string, headers []string, body []byte) (int, http.Header, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	for i := 0; i < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, nil, err
	}
	return resp.StatusCode, resp.Header, b, nil
}

// The built server, killed with SIGKILL under steady sends that each carry
// their own Idempotency-Key, then restarted: every key retried until it is
// answered leaves exactly one message, and a key answered before the kill
// answers the same message again.
func TestIdempotencyKeysSurviveKill(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		acct := b.createAccount(t, "Keyed")
		const agent, user = "+15550000011", "+14155550177"
		b.addNumber(t, acct.AccountID, agent)
		headers := auth(acct.APIKey, acct.APISecret)
		// A short claim, so that the restarted server takes over the keys
		// the dead one held soon.
		args := []string{"--idempotency-lock", "2s", "--rate-limit", "0"}
		srv := b.serve(t, args...)
		r := srv.client(t).Do(http.MethodPost, "/v1/sandbox/"+acct.AccountID+"/inbound",
			map[string]any{"service": "whatsapp", "from": user, "to": agent, "message": "hello"}, headers...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)

		path := "/v1/messages/individual/" + acct.AccountID + "/send"
		body := func(key string) []byte {
			b, _ := json.Marshal(map[string]any{"service": "whatsapp", "from": agent, "to": user, "content": "order " + key})
			return b
		}
		client := &http.Client{Timeout: time.Minute}
		const workers, killAfter = 32, 200
		var (
			mu       sync.Mutex
			sends    []*keyedSend
			answered int
			killed   = make(chan struct{})
			once     sync.Once
			wg       sync.WaitGroup
		)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					s := &keyedSend{key: fmt.Sprintf("kill-%d-%d", w, i)}
					mu.Lock()
					sends = append(sends, s)
					mu.Unlock()
					status, _, b, err := postKeyed(client, srv.URL+path, s.key, headers, body(s.key))
					if err != nil {
						return // the server died
					}
					if status != http.StatusOK {
						t.Errorf("send %s: %d %s", s.key, status, b)
						return
					}
					var answer map[string]any
					if err := json.Unmarshal(b, &answer); err != nil {
						t.Errorf("send %s: %v", s.key, err)
						return
					}
					mu.Lock()
					s.answered, s.messageID = true, answer["message_id"].(string)
					answered++
					if answered == killAfter {
						once.Do(func() { close(killed) })
					}
					mu.Unlock()
				}
			}()
		}
		select {
		case <-killed:
		case <-srv.done:
			t.Fatalf("the server exited before the kill")
		}
		srv.signal(t, syscall.SIGKILL)
		srv.waitExit(t, 30*time.Second)
		wg.Wait()
		require.False(t, t.Failed())

		restarted := b.serve(t, args...)
		ids := map[string]string{}
		inFlight := 0
		for _, s := range sends {
			for {
				status, h, b, err := postKeyed(client, restarted.URL+path, s.key, headers, body(s.key))
				require.NoError(t, err)
				if status == http.StatusConflict {
					// Held by the dead server until its claim lapses.
					inFlight++
					wait, err := strconv.Atoi(h.Get("Retry-After"))
					require.NoError(t, err, "409 %s without Retry-After", b)
					require.GreaterOrEqual(t, wait, 1)
					time.Sleep(time.Duration(wait) * time.Second)
					continue
				}
				require.Equal(t, http.StatusOK, status, "retry of %s: %s", s.key, b)
				var answer map[string]any
				require.NoError(t, json.Unmarshal(b, &answer))
				id := answer["message_id"].(string)
				if s.answered {
					require.Equal(t, s.messageID, id, "%s answers the message it answered before the kill", s.key)
				}
				require.NotContains(t, ids, id, "two keys answer one message")
				ids[id] = s.key
				break
			}
		}
		t.Logf("%d keys, %d answered before the kill, %d retries waited for a dead claim", len(sends), answered, inFlight)

		db, err := store.Open(context.Background(), b.dbURL, store.Options{})
		require.NoError(t, err)
		defer db.Close()
		var stored int
		require.NoError(t, db.Bun().NewRaw("SELECT count(*) FROM messages WHERE direction = 'outbound-api'").Scan(context.Background(), &stored))
		require.Equal(t, len(sends), stored, "exactly one message per key")
		restarted.stop(t)
	})
}
