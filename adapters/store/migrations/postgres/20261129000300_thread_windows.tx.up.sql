-- The customer service window of an individual thread: when free-form
-- sends stop being accepted (WhatsApp Cloud API: 24 hours after the
-- provider time of the user's last message). NULL for threads whose
-- provider has no window.
ALTER TABLE threads ADD COLUMN window_closes_at TIMESTAMPTZ;

-- Threads of WhatsApp Cloud API numbers that users wrote in before: their
-- window closes 24 hours after the last message was received.
UPDATE threads SET window_closes_at = last_inbound_at + INTERVAL '24 hours'
WHERE type = 'individual' AND last_inbound_at IS NOT NULL AND EXISTS (
    SELECT 1 FROM numbers AS n
    WHERE n.account_id = threads.account_id AND n.service = threads.service
      AND n.number = threads.agent_number AND n.provider = 'whatsapp-cloud'
);
