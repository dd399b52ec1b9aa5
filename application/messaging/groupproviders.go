package messaging

import (
	"context"
	"time"

	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// GroupCreator is what a provider implements when its platform makes
// the groups an agent asks for itself, later: CreateGroup asks for one and
// returns the id of the platform's request, whose outcome a provider
// webhook reports (see GroupReport). A GroupProvider's ApplyGroupChange
// is then never asked to create. A refusal is a *ProviderError, or a
// failure the caller can act on.
type GroupCreator interface {
	CreateGroup(ctx context.Context, c GroupChange) (request string, err error)
}

// PendingGroupChat is the provider chat a group is kept under while its
// platform works on the request that creates it; the chat takes the
// group's own id when the platform reports the group made.
func PendingGroupChat(request string) string { return "request:" + request }

// GroupInspector is what a provider implements when its platform tells
// how a group is (its members, its join requests) and which groups an
// agent number has.
type GroupInspector interface {
	// GroupInfo reads the group q names as the platform has it.
	GroupInfo(ctx context.Context, q GroupQuery) (ProviderGroup, error)
	// JoinRequests lists the group's open requests to join, oldest first.
	JoinRequests(ctx context.Context, q GroupQuery) ([]JoinRequest, error)
	// ActiveGroups lists the agent number's groups on the platform.
	ActiveGroups(ctx context.Context, n account.Number, settings map[string]string) ([]ProviderGroup, error)
}

// GroupLimits is what a provider implements when its platform allows
// fewer participants in a group than messaging.MaxGroupMembers.
type GroupLimits interface {
	// MaxGroupParticipants is how many people a group may have besides
	// the agent number.
	MaxGroupParticipants() int
}

// GroupQuery names a group on its provider: the agent number in it, with
// its opened settings, and the group as stored.
type GroupQuery struct {
	Number   account.Number
	Settings map[string]string
	Group    messaging.GroupState
}

// ProviderGroup is a group as its platform has it.
type ProviderGroup struct {
	// ChatID is the platform's id of the group; ThreadID its group
	// thread, when Switchboard keeps one.
	ChatID   string
	ThreadID string
	Subject  string
	// Description, Suspended, JoinApprovalMode, Participants and
	// ParticipantCount are known for one group read, not in lists.
	Description      string
	CreatedAt        time.Time
	Suspended        bool
	JoinApprovalMode messaging.JoinApprovalMode
	// Participants are the people in the group besides the agent number;
	// ParticipantCount counts them all, where the platform lists fewer.
	Participants     []GroupPerson
	ParticipantCount int
	InviteLink       string
}

// GroupPerson is someone a platform names in a group: their address (a
// phone number in E.164 form, or their user id where the platform shows
// no number), their user id and username where shown.
type GroupPerson struct {
	Address  string
	UserID   string
	Username string
}

// JoinRequest is a person's open request to join a group.
type JoinRequest struct {
	ID        string
	Person    GroupPerson
	CreatedAt time.Time
}
