-- An outbound email Message-ID is its own id (email.SentMessageID), and a
-- thread first email is the one whose id the thread id names
-- (email.StartedThreadID): both are found by primary key. The indexes by
-- Message-ID and by thread keep only the others, the inbound Message-IDs
-- and the emails that join a thread.
CREATE INDEX emails_inbound_message_id_idx ON emails (account_id, message_id) WHERE direction = 'inbound';
DROP INDEX IF EXISTS emails_message_id_idx;
CREATE INDEX emails_joined_thread_idx ON emails (account_id, thread_id, created_at, id) WHERE thread_id <> 'eth_' || substr(id, 5);
DROP INDEX IF EXISTS emails_thread_idx;
