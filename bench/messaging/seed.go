package messaging

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/switchboard-dev/switchboard/adapters/store"
	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/bench/harness"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// The seeding SQL writes in bulk the rows the use cases write one at a time, with the
// same values: Receive creates a user's individual thread, with the agent and the
// user as participants and the user as a contact; queue() stores an outbound
// message, queued, together with its delivery job. Thread k is user k's
// (userNumber); message i is in thread i mod the number of threads. Ids are seqID's.

// seedThreads creates threads 0 … n-1 of the account, thread k between user k and
// the agent number whose index is the SQL expression agent of k (e.g. "k", "0"), with
// their participants and contacts, as if each user had written once at now.
func seedThreads(ctx context.Context, db *store.DB, accountID string, n int, agent string, now time.Time) error {
	threads := fmt.Sprintf(`
		INSERT INTO threads (id, account_id, service, type, agent_number, contact, name,
			last_inbound_at, last_message_at, created_at, updated_at)
		SELECT %s, ?0, ?1, 'individual', %s, %s, %s, ?2, ?2, ?2, ?2
		FROM generate_series(0, ?3 - 1) AS k`,
		seqIDSQL("thr", "k"), agentNumberSQL(agent), userNumberSQL("k"), userNumberSQL("k"))
	participants := `
		INSERT INTO thread_participants (thread_id, address, name, admin, is_agent, joined_at)
		SELECT id, agent_number, '', false, true, created_at FROM threads WHERE account_id = ?0
		UNION ALL
		SELECT id, contact, '', false, false, created_at FROM threads WHERE account_id = ?0`
	contacts := `
		INSERT INTO contacts (account_id, service, address, name, created_at, updated_at)
		SELECT account_id, service, contact, '', created_at, created_at FROM threads WHERE account_id = ?0`
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{threads, []any{accountID, service, now, n}},
		{participants, []any{accountID}},
		{contacts, []any{accountID}},
	} {
		if _, err := db.Bun().ExecContext(ctx, q.sql, q.args...); err != nil {
			return fmt.Errorf("seed threads: %s: %w", firstLine(q.sql), err)
		}
	}
	return nil
}

// seedHistory stores messages first … last in threads 0 … threads-1 as a
// conversation's history: even ones received from the user, odd ones sent by the
// agent and delivered (with the provider's message id the sandbox gives). Message i
// is i milliseconds younger than from.
func seedHistory(ctx context.Context, db *store.DB, first, last, threads int, from time.Time) error {
	q := fmt.Sprintf(`
		INSERT INTO messages (id, account_id, thread_id, service, direction, from_address, to_address,
			kind, body, status, provider_message_id, created_at, updated_at)
		SELECT %s, t.account_id, t.id, t.service,
			CASE WHEN i %% 2 = 0 THEN 'inbound' ELSE 'outbound-api' END,
			CASE WHEN i %% 2 = 0 THEN t.contact ELSE t.agent_number END,
			CASE WHEN i %% 2 = 0 THEN t.agent_number ELSE t.contact END,
			'text', ?0, CASE WHEN i %% 2 = 0 THEN 'received' ELSE 'delivered' END,
			CASE WHEN i %% 2 = 0 THEN NULL ELSE 'sbx_' || substr(md5(i::text), 1, 24) END,
			?1::timestamptz + i * interval '1 millisecond', ?1::timestamptz + i * interval '1 millisecond'
		FROM generate_series(?2::bigint, ?3::bigint) AS i
		JOIN threads t ON t.id = %s`, seqIDSQL("msg", "i"), seqIDSQL("thr", "i % ?4"))
	if _, err := db.Bun().ExecContext(ctx, q, body, from, first, last, threads); err != nil {
		return fmt.Errorf("seed messages: %w", err)
	}
	return nil
}

// seedQueued stores messages first … last in threads 0 … threads-1, sent by the
// thread's agent number and queued, each with its delivery job as queue() enqueues
// it: kind message.deliver, the message id in the payload and the unique key, paced
// by the agent number, 12 attempts. Jobs are inserted in message order, so the
// runner, which claims the oldest first, meets the agent numbers in turn.
func seedQueued(ctx context.Context, db *store.DB, first, last, threads int, now time.Time) error {
	msgs := fmt.Sprintf(`
		INSERT INTO messages (id, account_id, thread_id, service, direction, from_address, to_address,
			kind, body, status, created_at, updated_at)
		SELECT %s, t.account_id, t.id, t.service, 'outbound-api', t.agent_number, t.contact,
			'text', ?0, 'queued', ?1, ?1
		FROM generate_series(?2::bigint, ?3::bigint) AS i
		JOIN threads t ON t.id = %s`, seqIDSQL("msg", "i"), seqIDSQL("thr", "i % ?4"))
	// The payload is json.Marshal's encoding of {MessageID}; the pace key is
	// PaceKey's and the endpoint key EndpointKey's (see
	// TestSeedMatchesTheUseCase); the account is the thread's, so the claims
	// bound the account's share as they do for sends.
	fairColumns, fairValues := ", account_id, endpoint_key", ", t.account_id, n.service || ':' || n.id"
	if fair, err := harness.JobsNameAccounts(ctx, db); err != nil {
		return err
	} else if !fair {
		fairColumns, fairValues = "", ""
	}
	jobsQ := fmt.Sprintf(`
		INSERT INTO jobs (kind, state, payload, max_attempts, unique_key, pace_key%s, run_at, created_at)
		SELECT ?0, ?1, convert_to('{"message_id":"' || m.id || '"}', 'UTF8'), ?2, 'deliver:' || m.id,
			n.service || ':' || n.id%s, ?3, ?3
		FROM generate_series(?4::bigint, ?5::bigint) AS i
		CROSS JOIN LATERAL (SELECT %s AS id) AS m
		JOIN threads t ON t.id = %s
		JOIN numbers n ON n.service = t.service AND n.number = t.agent_number
		ORDER BY i`, fairColumns, fairValues, seqIDSQL("msg", "i"), seqIDSQL("thr", "i % ?6"))
	return db.Bun().RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, msgs, body, now, first, last, threads); err != nil {
			return fmt.Errorf("seed queued messages: %w", err)
		}
		if _, err := tx.ExecContext(ctx, jobsQ, appmessaging.DeliverKind, jobs.StateAvailable, appmessaging.DeliveryAttempts,
			now.UnixMicro(), first, last, threads); err != nil {
			return fmt.Errorf("seed delivery jobs: %w", err)
		}
		return nil
	})
}
