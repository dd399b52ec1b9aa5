-- An outbound email Message-ID is its own id (email.SentMessageID), and a
-- thread first email is the one whose id the thread id names
-- (email.StartedThreadID): both are found by primary key. The indexes by
-- Message-ID and by thread keep only the others, the inbound Message-IDs
-- and the emails that join a thread, so that a send that starts a thread,
-- as most do, writes two index entries fewer. Built CONCURRENTLY, one
-- statement per chunk, outside a transaction (docs/upgrading.md).
DROP INDEX CONCURRENTLY IF EXISTS emails_inbound_message_id_idx;
--bun:split
CREATE INDEX CONCURRENTLY emails_inbound_message_id_idx ON emails (account_id, message_id) WHERE direction = 'inbound';
--bun:split
DROP INDEX CONCURRENTLY IF EXISTS emails_message_id_idx;
--bun:split
DROP INDEX CONCURRENTLY IF EXISTS emails_joined_thread_idx;
--bun:split
CREATE INDEX CONCURRENTLY emails_joined_thread_idx ON emails (account_id, thread_id, created_at, id) WHERE thread_id <> 'eth_' || substr(id, 5);
--bun:split
DROP INDEX CONCURRENTLY IF EXISTS emails_thread_idx;
