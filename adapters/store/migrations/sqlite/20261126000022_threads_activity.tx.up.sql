-- Thread listings are ordered by activity (the last message, or the
-- thread's creation) newest first, then id: an index in that order lets a
-- page of an account with 10,000 threads read 21 rows instead of sorting
-- them all.
CREATE INDEX threads_activity_idx ON threads (account_id, COALESCE(last_message_at, created_at) DESC, id DESC);
