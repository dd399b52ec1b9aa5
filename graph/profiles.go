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
	SetName(ctx context.Context, t profiles.Target, name string) (profiles.Result, error)
	SetPicture(ctx context.Context, t profiles.Target, imageURL string) (profiles.Result, error)
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

// setAgentProfile sets the name, then the picture, that input gives; each
// call's outcome is one entry of fields, and the number is as the last
// left it.
func setAgentProfile(ctx context.Context, set ProfileSetter, accountID string, input model.SetAgentProfileInput) (*model.AgentProfileResult, error) {
	if input.Name == nil && input.ImageURL == nil {
		return nil, failure.Invalid(failure.Field("missing", "name or imageUrl is required", "name"))
	}
	t := profiles.Target{AccountID: accountID, AgentNumber: input.AgentNumber}
	if input.Service != nil {
		t.Service = string(*input.Service)
	}
	out := &model.AgentProfileResult{Fields: []model.ProfileFieldOutcome{}}
	apply := func(res profiles.Result, err error) error {
		if err != nil {
			return err
		}
		n := res.Number
		out.Number = &n
		f := model.ProfileFieldOutcome{Field: res.Field, Applied: res.Outcome.Applied}
		if res.Outcome.Reason != "" {
			f.Reason = &res.Outcome.Reason
		}
		out.Fields = append(out.Fields, f)
		return nil
	}
	if input.Name != nil {
		if err := apply(set.SetName(ctx, t, *input.Name)); err != nil {
			return nil, err
		}
	}
	if input.ImageURL != nil {
		if err := apply(set.SetPicture(ctx, t, *input.ImageURL)); err != nil {
			return nil, err
		}
	}
	return out, nil
}
