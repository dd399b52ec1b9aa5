package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/jobs"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// sendBatch is what a shared commit of n individual sends writes.
func sendBatch(n int) writes.Batch {
	now := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	var b writes.Batch
	for i := range n {
		id := fmt.Sprintf("msg_%032d", i)
		thread := fmt.Sprintf("thr_%d", i%8)
		b.Messages = append(b.Messages, messaging.Message{ID: id, AccountID: "acc_bench", ThreadID: thread, Service: account.WhatsApp,
			Direction: messaging.OutboundAPI, From: "+15550001000", To: "+15550002000",
			Content: messaging.Content{Kind: messaging.KindText, Text: "Your order has shipped and will arrive on Tuesday."},
			Status:  messaging.Queued, CreatedAt: now, UpdatedAt: now})
		b.ThreadActivity = append(b.ThreadActivity, writes.ThreadActivity{ThreadID: thread, At: now})
		b.Events = append(b.Events, event.Event{ID: "evt_" + id, AccountID: "acc_bench", Type: "message.queued", ThreadID: thread,
			Payload: []byte(`{"message_id":"` + id + `","status":"queued","body":"Your order has shipped and will arrive on Tuesday."}`), CreatedAt: now})
		b.Jobs = append(b.Jobs, jobs.EnqueueParams{Kind: "message.deliver", Payload: []byte(`{"message_id":"` + id + `"}`),
			PaceKey: "+15550001000", AccountID: "acc_bench", MaxAttempts: 5})
	}
	return b
}

// BenchmarkPostgresSendBatchStatements measures building the statements of
// a shared commit of 32 sends, which the committer does while the other
// sends wait for it.
func BenchmarkPostgresSendBatchStatements(b *testing.B) {
	tables := rowTables{tables: pgdialect.New().Tables()}
	batch := sendBatch(32)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		all := &binder{}
		pgStatements(tables, batch, now, func() *binder { return all })
	}
}
