-- The customer service window of an individual thread: when free-form
-- sends stop being accepted (WhatsApp Cloud API: 24 hours after the
-- provider time of the user's last message). NULL for threads whose
-- provider has no window.
ALTER TABLE threads ADD COLUMN window_closes_at TIMESTAMP;

-- Threads of WhatsApp Cloud API numbers that users wrote in before: their
-- window closes 24 hours after the last message was received, written in
-- the form the store writes times in (UTC, with its offset).
UPDATE threads SET window_closes_at = strftime('%Y-%m-%d %H:%M:%S', last_inbound_at, '+24 hours') || '+00:00'
WHERE type = 'individual' AND last_inbound_at IS NOT NULL AND EXISTS (
    SELECT 1 FROM numbers AS n
    WHERE n.account_id = threads.account_id AND n.service = threads.service
      AND n.number = threads.agent_number AND n.provider = 'whatsapp-cloud'
);
