package store

import "log/slog"

// WatchHealth starts the health watcher, as the fx module does.
func (db *DB) WatchHealth(log *slog.Logger) { db.watchHealth(log) }
