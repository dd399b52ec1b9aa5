package mcp_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// The group actions REST has, through manage_group, and a send into the
// group.
func TestManageGroup(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		cs := b.connect(t, b.acme)
		type group struct {
			Message      string   `json:"message"`
			ThreadID     string   `json:"thread_id"`
			Title        string   `json:"title"`
			Participants []string `json:"participants"`
			Admins       []string `json:"admins"`
			Announcement bool     `json:"announcement"`
			InviteCode   string   `json:"invite_code"`
		}
		var g group
		ok(t, cs, "manage_group", map[string]any{"action": "create", "agent_number": agentA, "title": "Launch team",
			"participants": []string{userA}, "initial_message": "Welcome!"}, &g)
		require.Equal(t, "Launch team", g.Title)
		require.ElementsMatch(t, []string{agentA, userA}, g.Participants)
		require.Equal(t, []string{agentA}, g.Admins, "the creator is its admin")

		ok(t, cs, "manage_group", map[string]any{"action": "add_participants", "agent_number": agentA, "thread_id": g.ThreadID, "participants": []string{userB}}, &g)
		require.Contains(t, g.Participants, userB)
		ok(t, cs, "manage_group", map[string]any{"action": "update_settings", "agent_number": agentA, "thread_id": g.ThreadID, "setting": "announcement"}, &g)
		require.True(t, g.Announcement)
		ok(t, cs, "manage_group", map[string]any{"action": "update_name", "agent_number": agentA, "thread_id": g.ThreadID, "name": "Launch crew"}, &g)
		require.Equal(t, "Launch crew", g.Title)

		var sent struct {
			ThreadID string `json:"thread_id"`
			Status   string `json:"status"`
		}
		ok(t, cs, "send_message", map[string]any{"from": agentA, "thread_id": g.ThreadID, "text": "Hello, team"}, &sent)
		require.Equal(t, g.ThreadID, sent.ThreadID)

		e := fails(t, cs, "manage_group", map[string]any{"action": "update_name", "agent_number": agentA, "thread_id": g.ThreadID, "name": "x", "title": "y"})
		require.Equal(t, "validation_error", e.Code)
		require.Equal(t, "title", e.Fields[0].Field, "an argument of another action is refused")
		e = fails(t, cs, "manage_group", map[string]any{"action": "update_settings", "agent_number": agentA, "thread_id": g.ThreadID, "setting": "loud"})
		require.Equal(t, "setting", e.Fields[0].Field)
		other := b.connect(t, b.other)
		e = fails(t, other, "manage_group", map[string]any{"action": "leave", "agent_number": agentOther, "thread_id": g.ThreadID})
		require.Equal(t, "not_found", e.Code, "another account's group is not found")

		// Reading: info, list; the sandbox has no join requests.
		var info group
		ok(t, cs, "manage_group", map[string]any{"action": "info", "agent_number": agentA, "thread_id": g.ThreadID}, &info)
		require.Equal(t, "Launch crew", info.Title)
		var listed struct {
			Groups []struct {
				ThreadID         string `json:"thread_id"`
				Subject          string `json:"subject"`
				ParticipantCount int    `json:"participant_count"`
			} `json:"groups"`
		}
		ok(t, cs, "manage_group", map[string]any{"action": "list", "agent_number": agentA}, &listed)
		require.Len(t, listed.Groups, 1)
		require.Equal(t, g.ThreadID, listed.Groups[0].ThreadID)
		require.Equal(t, "Launch crew", listed.Groups[0].Subject)
		require.Equal(t, 2, listed.Groups[0].ParticipantCount)
		e = fails(t, cs, "manage_group", map[string]any{"action": "join_requests", "agent_number": agentA, "thread_id": g.ThreadID})
		require.Equal(t, "not_supported_by_provider", e.Code)
		e = fails(t, cs, "manage_group", map[string]any{"action": "approve_join_requests", "agent_number": agentA, "thread_id": g.ThreadID})
		require.Equal(t, "join_requests", e.Fields[0].Field, "approving names the requests")
		e = fails(t, cs, "manage_group", map[string]any{"action": "approve_join_requests", "agent_number": agentA, "thread_id": g.ThreadID, "join_requests": []string{"jr-1"}})
		require.Equal(t, "not_supported_by_provider", e.Code, "nobody asks to join a sandbox group")
		e = fails(t, cs, "manage_group", map[string]any{"action": "list", "agent_number": agentA, "thread_id": g.ThreadID})
		require.Equal(t, "thread_id", e.Fields[0].Field, "list takes no group")

		ok(t, cs, "manage_group", map[string]any{"action": "leave", "agent_number": agentA, "thread_id": g.ThreadID}, &g)
		e = fails(t, cs, "send_message", map[string]any{"from": agentA, "thread_id": g.ThreadID, "text": "Still here?"})
		require.Equal(t, "not_group_member", e.Code)

		// A deleted group has nobody left.
		var doomed group
		ok(t, cs, "manage_group", map[string]any{"action": "create", "agent_number": agentA, "title": "Short-lived", "participants": []string{userB}}, &doomed)
		ok(t, cs, "manage_group", map[string]any{"action": "delete", "agent_number": agentA, "thread_id": doomed.ThreadID}, &doomed)
		require.Empty(t, doomed.Participants)
		e = fails(t, cs, "send_message", map[string]any{"from": agentA, "thread_id": doomed.ThreadID, "text": "Anyone?"})
		require.Equal(t, "not_group_member", e.Code)
	})
}

func TestSendEmail(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		cs := b.connect(t, b.acme)
		status, raw := b.rest(t, b.acme, http.MethodPost, "/v1/emails/"+b.acme.accountID+"/create-email",
			map[string]any{"address": "support.bot", "domain_name": "mail.switchboard.local"})
		require.Equal(t, http.StatusOK, status, "body: %s", raw)

		var sent struct {
			EmailID   string `json:"email_id"`
			Status    string `json:"status"`
			Sender    string `json:"sender"`
			Recipient string `json:"recipient"`
		}
		args := map[string]any{"sender_address": "support.bot@mail.switchboard.local", "recipient_address": "ann@example.org",
			"subject": "Your order", "body": "It ships today.", "cc": []string{"bob@example.org"}, "idempotency_key": "mail-1"}
		ok(t, cs, "send_email", args, &sent)
		require.Equal(t, "queued", sent.Status)
		require.Equal(t, "ann@example.org", sent.Recipient)
		again := sent
		ok(t, cs, "send_email", args, &again)
		require.Equal(t, sent.EmailID, again.EmailID, "the key answers the first send")

		e := fails(t, cs, "send_email", map[string]any{"sender_address": "someone@elsewhere.example", "recipient_address": "ann@example.org", "subject": "x", "body": "y"})
		require.Equal(t, "sender_not_permitted", e.Code)
		e = fails(t, cs, "send_email", map[string]any{"sender_address": "support.bot@mail.switchboard.local", "recipient_address": "ann@example.org",
			"subject": "x", "body": "y", "cc": []string{"not an address"}})
		require.Equal(t, "validation_error", e.Code)
		require.Equal(t, "cc.0", e.Fields[0].Field)
	})
}

// Cron jobs through their tools: create, list, pause, resume, delete;
// another account's job is not found.
func TestCronTools(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		cs := b.connect(t, b.acme)
		type job struct {
			ID            string         `json:"id"`
			Status        string         `json:"status"`
			Frequency     string         `json:"frequency"`
			Time          string         `json:"time"`
			DayOfWeek     *int           `json:"day_of_week"`
			NextExecution string         `json:"next_execution"`
			Body          map[string]any `json:"body"`
		}
		var created job
		ok(t, cs, "create_cron_job", map[string]any{"endpoint_url": "http://127.0.0.1:9/hook", "frequency": "weekly", "time": "09:30",
			"timezone": "Europe/London", "method": "POST", "day_of_week": 0, "body": map[string]any{"ping": true}}, &created)
		require.Equal(t, "active", created.Status)
		require.Equal(t, 0, *created.DayOfWeek, "Sunday is 0, not absent")
		require.NotEmpty(t, created.NextExecution)
		require.Equal(t, map[string]any{"ping": true}, created.Body)

		var list struct {
			Jobs  []job `json:"jobs"`
			Total int   `json:"total"`
		}
		ok(t, cs, "list_cron_jobs", map[string]any{}, &list)
		require.Equal(t, 1, list.Total)
		require.Equal(t, created.ID, list.Jobs[0].ID)

		var state struct {
			ID            string `json:"id"`
			Status        string `json:"status"`
			NextExecution string `json:"next_execution"`
		}
		ok(t, cs, "pause_cron_job", map[string]any{"id": created.ID}, &state)
		require.Equal(t, "paused", state.Status)
		require.Empty(t, state.NextExecution)
		ok(t, cs, "pause_cron_job", map[string]any{"id": created.ID}, &state)
		require.Equal(t, "paused", state.Status, "pausing again changes nothing")
		ok(t, cs, "list_cron_jobs", map[string]any{"status": "active"}, &list)
		require.Zero(t, list.Total)
		ok(t, cs, "resume_cron_job", map[string]any{"id": created.ID}, &state)
		require.Equal(t, "active", state.Status)
		require.NotEmpty(t, state.NextExecution)

		other := b.connect(t, b.other)
		for _, tool := range []string{"pause_cron_job", "resume_cron_job", "delete_cron_job"} {
			require.Equal(t, "not_found", fails(t, other, tool, map[string]any{"id": created.ID}).Code, tool)
		}

		var deleted struct {
			ID      string `json:"id"`
			Deleted bool   `json:"deleted"`
		}
		ok(t, cs, "delete_cron_job", map[string]any{"id": created.ID}, &deleted)
		require.True(t, deleted.Deleted)
		require.Equal(t, "not_found", fails(t, cs, "delete_cron_job", map[string]any{"id": created.ID}).Code)

		e := fails(t, cs, "create_cron_job", map[string]any{"endpoint_url": "http://127.0.0.1:9/hook", "frequency": "daily", "time": "25:00",
			"timezone": "UTC", "method": "GET"})
		require.Equal(t, "validation_error", e.Code)
		require.Equal(t, "time", e.Fields[0].Field)
	})
}
