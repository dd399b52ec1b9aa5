-- The getUpdates offset of each agent number that is polled (a Telegram
-- bot in polling mode): the first update not yet stored. Only the holder
-- of the number's poll lease moves it, forward only, once the updates
-- before it are stored.
CREATE TABLE poll_offsets (
    number_id     TEXT PRIMARY KEY REFERENCES numbers (id) ON DELETE CASCADE,
    update_offset BIGINT NOT NULL
);
