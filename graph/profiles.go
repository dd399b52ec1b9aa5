package graph

import (
	"context"

	"github.com/switchboard-dev/switchboard/application/profiles"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/graph/model"
)

// ProfileSetter serves setAgentProfile; *profiles.Service implements it.
// Without one it answers not_implemented.
type ProfileSetter interface {
	Set(ctx context.Context, t profiles.Target, name, imageURL *string) ([]profiles.Result, error)
}

var _ ProfileSetter = (*profiles.Service)(nil)

var errNoProfiles = &failure.Error{Kind: failure.KindNotImplemented, Code: "profiles_unavailable", Message: "agent number profiles are not configured"}

// numberProfile is a number's stored profile as the schema shows it: null
// for what was never set.
func numberProfile(p account.Profile) *model.NumberProfile {
	out := &model.NumberProfile{UpdatedAt: p.UpdatedAt}
	if p.Name != "" {
		out.Name = &p.Name
	}
	if p.PictureURL != "" {
		out.ImageURL = &p.PictureURL
	}
	return out
}

// agentProfileResult is what setAgentProfile answers for the results
// of its calls: the number as the last left it, and each call's outcome.
func agentProfileResult(results []profiles.Result) *model.AgentProfileResult {
	out := &model.AgentProfileResult{Fields: []model.ProfileFieldOutcome{}}
	for _, res := range results {
		n := res.Number
		out.Number = &n
		f := model.ProfileFieldOutcome{Field: res.Field, Applied: res.Outcome.Applied}
		if res.Outcome.Reason != "" {
			f.Reason = &res.Outcome.Reason
		}
		out.Fields = append(out.Fields, f)
	}
	return out
}
