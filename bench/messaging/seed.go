package messaging

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboard-dev/switchboard/bench/harness"
)

// The seeding SQL writes in bulk the rows the use cases write one at a time, with the
// same values: Receive creates a user's individual thread, with the agent and the
// user as participants and the user as a contact; queue() stores an outbound
// message, queued, together with its delivery job. Thread k is user k's
// (userNumber); message i is in thread i mod the number of threads. Ids are seqID's.
// checkQueued holds seedQueued to a send through the API.

// timestamp is t as an SQL timestamptz literal.
func timestamp(t time.Time) string {
	return harness.Quote(t.UTC().Format(time.RFC3339Nano)) + "::timestamptz"
}

// seedThreads creates threads 0 … n-1 of the account, thread k between user k and
// the agent number whose index is the SQL expression agent of k (e.g. "k", "0"), with
// their participants and contacts, as if each user had written once at now.
func seedThreads(ctx context.Context, db *harness.SQL, accountID string, n int, agent string, now time.Time) error {
	account, at := harness.Quote(accountID), timestamp(now)
	err := db.Exec(ctx, fmt.Sprintf(`BEGIN;
		INSERT INTO threads (id, account_id, service, type, agent_number, contact, name,
			last_inbound_at, last_message_at, created_at, updated_at)
		SELECT %s, %s, %s, 'individual', %s, %s, %s, %[7]s, %[7]s, %[7]s, %[7]s
		FROM generate_series(0, %[8]d - 1) AS k;
		INSERT INTO thread_participants (thread_id, address, name, admin, is_agent, joined_at)
		SELECT id, agent_number, '', false, true, created_at FROM threads WHERE account_id = %[2]s
		UNION ALL
		SELECT id, contact, '', false, false, created_at FROM threads WHERE account_id = %[2]s;
		INSERT INTO contacts (account_id, service, address, name, created_at, updated_at)
		SELECT account_id, service, contact, '', created_at, created_at FROM threads WHERE account_id = %[2]s;
		COMMIT;`,
		seqIDSQL("thr", "k"), account, harness.Quote(service), agentNumberSQL(agent), userNumberSQL("k"), userNumberSQL("k"), at, n))
	if err != nil {
		return fmt.Errorf("seed threads: %w", err)
	}
	return nil
}

// seedHistory stores messages first … last as a conversation's history: even ones
// received from the user, odd ones sent by the agent and delivered (with the
// provider's message id the sandbox gives). Message i goes into the thread whose
// index is the SQL expression thread of i (e.g. "i % 100", "0") and is i
// milliseconds younger than from.
func seedHistory(ctx context.Context, db *harness.SQL, first, last int, thread string, from time.Time) error {
	err := db.Exec(ctx, fmt.Sprintf(`
		INSERT INTO messages (id, account_id, thread_id, service, direction, from_address, to_address,
			kind, body, status, provider_message_id, created_at, updated_at)
		SELECT %[1]s, t.account_id, t.id, t.service,
			CASE WHEN i %% 2 = 0 THEN 'inbound' ELSE 'outbound-api' END,
			CASE WHEN i %% 2 = 0 THEN t.contact ELSE t.agent_number END,
			CASE WHEN i %% 2 = 0 THEN t.agent_number ELSE t.contact END,
			'text', %[3]s, CASE WHEN i %% 2 = 0 THEN 'received' ELSE 'delivered' END,
			CASE WHEN i %% 2 = 0 THEN NULL ELSE 'sbx_' || substr(md5(i::text), 1, 24) END,
			%[4]s + i * interval '1 millisecond', %[4]s + i * interval '1 millisecond'
		FROM generate_series(%[5]d::bigint, %[6]d::bigint) AS i
		JOIN threads t ON t.id = %[2]s`,
		seqIDSQL("msg", "i"), seqIDSQL("thr", thread), harness.Quote(body), timestamp(from), first, last))
	if err != nil {
		return fmt.Errorf("seed messages: %w", err)
	}
	return nil
}

// deliveryAttempts is how many attempts queue() gives a message's delivery job.
const deliveryAttempts = 12

// seedQueued stores messages first … last in threads 0 … threads-1, sent by the
// thread's agent number and queued, each with its delivery job as queue() enqueues
// it, in one transaction: kind message.deliver, the message id in the payload, no
// unique key, paced by the agent number (service:number id), the account's, to the
// agent number's endpoint, deliveryAttempts attempts. (queue() also stores the
// message.sent event, which delivery does not read; it is not seeded.) Jobs are inserted in
// message order, so the runner, which claims the oldest first, meets the agent
// numbers in turn.
func seedQueued(ctx context.Context, db *harness.SQL, first, last, threads int, now time.Time) error {
	// The account and endpoint columns name the thread's account and the number,
	// so the claims bound the account's share as they do for sends; a build from
	// before them has none.
	fairColumns, fairValues := ", account_id, endpoint_key", ", t.account_id, n.service || ':' || n.id"
	if fair, err := harness.JobsNameAccounts(ctx, db); err != nil {
		return err
	} else if !fair {
		fairColumns, fairValues = "", ""
	}
	err := db.Exec(ctx, fmt.Sprintf(`BEGIN;
		INSERT INTO messages (id, account_id, thread_id, service, direction, from_address, to_address,
			kind, body, status, created_at, updated_at)
		SELECT %[1]s, t.account_id, t.id, t.service, 'outbound-api', t.agent_number, t.contact,
			'text', %[3]s, 'queued', %[4]s, %[4]s
		FROM generate_series(%[5]d::bigint, %[6]d::bigint) AS i
		JOIN threads t ON t.id = %[2]s;
		INSERT INTO jobs (kind, state, payload, max_attempts, unique_key, pace_key%[7]s, run_at, created_at)
		SELECT 'message.deliver', 'available', convert_to('{"message_id":"' || m.id || '"}', 'UTF8'), %[9]d, NULL,
			n.service || ':' || n.id%[8]s, %[10]d, %[10]d
		FROM generate_series(%[5]d::bigint, %[6]d::bigint) AS i
		CROSS JOIN LATERAL (SELECT %[1]s AS id) AS m
		JOIN threads t ON t.id = %[2]s
		JOIN numbers n ON n.service = t.service AND n.number = t.agent_number
		ORDER BY i;
		COMMIT;`,
		seqIDSQL("msg", "i"), seqIDSQL("thr", fmt.Sprintf("i %% %d", threads)), harness.Quote(body), timestamp(now),
		first, last, fairColumns, fairValues, deliveryAttempts, now.UnixMicro()))
	if err != nil {
		return fmt.Errorf("seed queued messages: %w", err)
	}
	return nil
}

// checkQueued holds seedQueued to the server: user 0 sends its agent number a
// message through sb (an API-only server, so the message stays queued), and
// message 0, seeded into the same thread, is compared with it, and their delivery
// jobs with each other, column by column (ids and times aside); then all four rows
// are deleted. The threads must be seeded.
func checkQueued(ctx context.Context, sb *harness.Switchboard, db *harness.SQL, threads int) error {
	var sent struct {
		MessageID string `json:"message_id"`
	}
	in := map[string]string{"from": agentNumber(0), "to": userNumber(0), "service": service, "content": body}
	if err := harness.PostJSON(ctx, sb.URL+"/v1/messages/individual/"+sb.AccountID+"/send", sb.Header(), in, &sent); err != nil {
		return fmt.Errorf("check the seeding SQL: %w", err)
	}
	if err := seedQueued(ctx, db, 0, 0, threads, time.Now()); err != nil {
		return err
	}
	seeded := seqID("msg", 0)
	message := func(id string) harness.Row {
		return harness.Row{From: "messages", Where: "id = " + harness.Quote(id), IDs: []string{id}}
	}
	if err := db.RowsAlike(ctx, "seeded queued message", message(sent.MessageID), message(seeded), "created_at", "updated_at"); err != nil {
		return err
	}
	job := func(id string) harness.Row {
		return harness.Row{From: "(SELECT *, convert_from(payload, 'UTF8') AS payload_text FROM jobs)",
			Where: "strpos(payload_text, " + harness.Quote(id) + ") > 0", IDs: []string{id}}
	}
	if err := db.RowsAlike(ctx, "seeded delivery job", job(sent.MessageID), job(seeded), "id", "payload", "run_at", "created_at"); err != nil {
		return err
	}
	ids := harness.QuoteList([]string{sent.MessageID, seeded})
	return db.Exec(ctx, `DELETE FROM jobs WHERE kind = 'message.deliver';
		DELETE FROM messages WHERE id IN `+ids)
}
