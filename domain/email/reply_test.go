package email_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/domain/email"
)

func TestExtractReply(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"no quote", "Hello\nthere\n", "Hello\nthere"},
		{"gmail attribution on one line", "Yes.\n\nOn Tue, Nov 24, 2026 at 9:15 AM Bot <b@x.test> wrote:\n> old\n", "Yes."},
		{"gmail attribution wrapped", "Yes.\r\n\r\nOn Tue, Nov 24, 2026 at 9:15 AM Bot <b@x.test>\r\nwrote:\r\n\r\n> old\r\n", "Yes."},
		{"outlook original message", "Again please.\n\n-----Original Message-----\nFrom: Bot\nSent: today\n\nold", "Again please."},
		{"outlook header block", "Fine.\n\n________________________________\nFrom: Bot <b@x.test>\nSent: Tuesday\nTo: me\n", "Fine."},
		{"outlook header block without separator", "Fine.\n\nFrom: Bot <b@x.test>\nSent: Tuesday\nSubject: x\n\nold", "Fine."},
		{"inline answers keep the answers", "> question one\nanswer one\n> question two\nanswer two", "answer one\nanswer two"},
		{"german", "Ja.\n\nAm 24.11.2026 um 09:15 schrieb Bot <b@x.test>:\n> alt", "Ja."},
		{"only a quote", "> all quoted\n> text", ""},
		{"a From: line alone is text", "From: the start it was clear.\nThanks", "From: the start it was clear.\nThanks"},
	}
	for _, c := range cases {
		require.Equal(t, c.want, email.ExtractReply(c.in), c.name)
	}
}

func TestSubjectKeyAndReplyHeaders(t *testing.T) {
	t.Parallel()
	require.Equal(t, "your report", email.SubjectKey("RE: Fwd:  Your   Report"))
	require.True(t, email.IsReplySubject("Re: x"))
	require.False(t, email.IsReplySubject("Report"))
	require.Equal(t, "Re: Report", email.ReplySubject("Report"))
	require.Equal(t, "RE: Report", email.ReplySubject("RE: Report"))
	require.Equal(t, []string{"<a@x>", "<b@x>"}, email.MessageIDs(" <a@x> (comment) <b@x>"))
	require.Equal(t, []string{"<r@x>", "<c@x>", "<m@x>"}, email.ReplyReferences([]string{"<r@x>", "<b@x>", "<c@x>"}, "<m@x>", 3))
}
