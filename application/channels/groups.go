package channels

import (
	"context"
	"time"

	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// GroupUpdate is a change of a provider group chat that the provider
// reported (a WhatsApp Cloud API group webhook).
type GroupUpdate struct {
	// ChatID is the provider's id of the group; Request, for a group
	// made or refused, the request that asked for it.
	ChatID  string
	Request string
	Kind    appmessaging.GroupReportKind
	// The rest is as in appmessaging.GroupReport.
	Title       string
	InviteLink  string
	Description *string
	People      []appmessaging.GroupPerson
	JoinRequest *appmessaging.JoinRequest
	Failure     *appmessaging.ProviderError
	// At is when the provider made the change, as it says.
	At time.Time
}

// creationRace is how long after a group was made its report may arrive
// before the create that asked for it is recorded: the provider answers
// the request, then Switchboard commits it.
const creationRace = time.Minute

// ThreadOfChat is the group thread of a provider group chat.
func (d *Directory) ThreadOfChat(ctx context.Context, n account.Number, chat string) (string, error) {
	return d.store.Repos().GroupChatThread(ctx, n.ID, chat)
}

// GroupReported records a change of a group chat of the agent number n
// that its provider reported. A group made at Switchboard's request
// leaves the chat of its request (appmessaging.PendingGroupChat) for its
// own id; one made elsewhere becomes a group thread, unless it was made
// less than creationRace ago, when its create may still be committing:
// that report fails Unavailable, for the provider to deliver again. A
// report about a chat Switchboard does not keep is left alone.
func (s *Service) GroupReported(ctx context.Context, n account.Number, u GroupUpdate) error {
	r := s.store.Repos()
	chat := u.ChatID
	switch {
	case u.Kind == appmessaging.GroupReportCreateFailed && u.Request != "":
		chat = appmessaging.PendingGroupChat(u.Request)
	case u.Kind == appmessaging.GroupReportCreated && u.Request != "" && u.ChatID != "":
		err := r.MoveGroupChat(ctx, n.ID, appmessaging.PendingGroupChat(u.Request), u.ChatID)
		if err != nil && !failure.Is(err, failure.KindConflict) {
			return err
		}
	}
	if chat == "" {
		return nil
	}
	threadID, err := r.GroupChatThread(ctx, n.ID, chat)
	if failure.Is(err, failure.KindNotFound) && u.Kind == appmessaging.GroupReportCreated {
		if u.Request != "" && s.now().Sub(u.At) < creationRace {
			// The create that asked for the group may not be recorded
			// yet: the provider is asked to report it again.
			return &failure.Error{Kind: failure.KindUnavailable, Code: "unavailable", RetryAfter: 5 * time.Second,
				Message: "the group's creation is not recorded yet; report it again"}
		}
		threadID, err = s.groupThread(ctx, n, chat, u.Title, n.Number, "")
	}
	if failure.Is(err, failure.KindNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.receiver.ApplyGroupReport(ctx, appmessaging.GroupReport{
		AccountID: n.AccountID, ThreadID: threadID, Agent: n.Number, Kind: u.Kind,
		Title: u.Title, InviteLink: u.InviteLink, Description: u.Description, People: u.People,
		JoinRequest: u.JoinRequest, Failure: u.Failure,
	})
}
