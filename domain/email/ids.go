package email

import (
	"strings"

	"github.com/switchboard-dev/switchboard/domain/ident"
)

// SentMessageID is the Message-ID of the outbound email id, sent from an
// address on domain. It names the email itself, so that the email a reply
// answers is found by its id.
func SentMessageID(id, domain string) string { return "<" + id + "@" + domain + ">" }

// SentEmailID is the email id that messageID names, when messageID has the
// form SentMessageID gives (a Message-ID from elsewhere may have it too).
func SentEmailID(messageID string) (string, bool) {
	inner, opened := strings.CutPrefix(messageID, "<")
	inner, closed := strings.CutSuffix(inner, ">")
	id, _, at := strings.Cut(inner, "@")
	if !opened || !closed || !at || !ident.Valid(ident.Email, id) {
		return "", false
	}
	return id, true
}

// StartedThreadID is the id of the thread the email emailID starts (an
// email that answers none of the account's). A thread's first email is
// therefore found from the thread's id (ThreadStarterID).
func StartedThreadID(emailID string) string {
	return ident.EmailThread + "_" + strings.TrimPrefix(emailID, ident.Email+"_")
}

// ThreadStarterID is the id of the email that started the thread threadID.
func ThreadStarterID(threadID string) string {
	return ident.Email + "_" + strings.TrimPrefix(threadID, ident.EmailThread+"_")
}
