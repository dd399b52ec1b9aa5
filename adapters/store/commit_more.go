package store

import "github.com/switchboard-dev/switchboard/application/writes"

// groupChatToRow is a provider group chat linked to its group thread, as
// the batch operation GroupChats stores it.
func groupChatToRow(c writes.GroupChat) channelChatRow {
	return channelChatRow{NumberID: c.NumberID, ChatID: c.ChatID, ThreadID: c.ThreadID, CreatedAt: c.At}
}
