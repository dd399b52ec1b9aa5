package rest

import (
	"context"
	"net/http"
	"strings"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/profiles"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// ProfileUseCases is what the REST adapter needs from the profile use
// cases.
type ProfileUseCases interface {
	SetName(ctx context.Context, t profiles.Target, name string) (profiles.Result, error)
	SetPicture(ctx context.Context, t profiles.Target, imageURL string) (profiles.Result, error)
}

// mountProfiles serves A1Base's profile-settings calls.
func (s *server) mountProfiles(api *edge.Routes) {
	if s.profiles == nil {
		return
	}
	api.Handle(http.MethodPost, "/profile-settings/{accountId}/update-profile-name", s.idempotent(s.profileCall("name", s.profiles.SetName)))
	api.Handle(http.MethodPost, "/profile-settings/{accountId}/update-profile-picture", s.idempotent(s.profileCall("image_url", s.profiles.SetPicture)))
}

// profileCallBody is both profile calls: the agent number and, for
// update-profile-name, its new display name or, for
// update-profile-picture, the URL of its new picture; service picks the
// number when the account has it on several services.
type profileCallBody struct {
	AgentNumber *string `json:"agent_number"`
	Name        *string `json:"name"`
	ImageURL    *string `json:"image_url"`
	Service     *string `json:"service"`
}

// profileCall serves the profile call that sets field (name or
// image_url) with set; the other call's field is refused, not ignored.
func (s *server) profileCall(field string, set func(context.Context, profiles.Target, string) (profiles.Result, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var b profileCallBody
		if err := decodeJSON(r, &b); err != nil {
			edge.WriteError(w, r, err)
			return
		}
		values := map[string]*string{"name": b.Name, "image_url": b.ImageURL}
		var p failure.Problems
		required(&p, b.AgentNumber, "agent_number")
		required(&p, values[field], field)
		for other, v := range values {
			if other != field && v != nil {
				p.Add("extra_forbidden", other+" is not a field of this call", other)
			}
		}
		if err := p.Err(); err != nil {
			edge.WriteError(w, r, err)
			return
		}
		res, err := set(r.Context(), profileTarget(r, b.AgentNumber, b.Service), *values[field])
		s.writeProfile(w, r, res, err)
	}
}

// profileTarget is the number a profile call names, of the account the
// request authenticated as (the path's, checked by the edge).
func profileTarget(r *http.Request, agentNumber, service *string) profiles.Target {
	principal, _ := accounts.PrincipalFrom(r.Context())
	return profiles.Target{AccountID: principal.AccountID, AgentNumber: *agentNumber, Service: str(service)}
}

// profileAnswer is the answer to a profile call: the number's profile as
// stored, and what its provider did with the field that changed.
type profileAnswer struct {
	Status  string      `json:"status"`
	Message string      `json:"message"`
	Data    profileBody `json:"data"`
}

type profileBody struct {
	NumberID    string            `json:"number_id"`
	AgentNumber string            `json:"agent_number"`
	Service     string            `json:"service"`
	Provider    string            `json:"provider"`
	Profile     numberProfileBody `json:"profile"`
	// Fields says, for each field the call changed, whether the provider
	// applied it and, when not, why.
	Fields []profileField `json:"fields"`
}

type profileField struct {
	Field   string `json:"field"`
	Applied bool   `json:"applied"`
	Reason  string `json:"reason,omitempty"`
}

// profileFieldNames names a field in the answer's message.
var profileFieldNames = map[string]string{"name": "profile name", "image_url": "profile picture"}

func (s *server) writeProfile(w http.ResponseWriter, r *http.Request, res profiles.Result, err error) {
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	n := res.Number
	body := profileBody{
		NumberID: n.ID, AgentNumber: n.Number, Service: string(n.Service), Provider: string(n.Provider), Profile: numberProfile(n.Profile),
		Fields: []profileField{{Field: res.Field, Applied: res.Outcome.Applied, Reason: res.Outcome.Reason}},
	}
	what := profileFieldNames[res.Field]
	message := strings.ToUpper(what[:1]) + what[1:] + " of " + n.Number + " saved and applied on " + string(n.Service) + "."
	if !res.Outcome.Applied {
		message = strings.ToUpper(what[:1]) + what[1:] + " of " + n.Number + " saved, not applied: " + res.Outcome.Reason + "."
	}
	edge.WriteJSON(w, http.StatusOK, profileAnswer{Status: "success", Message: message, Data: body})
}

// numberProfileBody is a number's stored profile; null for what was never
// set.
type numberProfileBody struct {
	Name      *string `json:"name"`
	ImageURL  *string `json:"image_url"`
	UpdatedAt *string `json:"updated_at"`
}

func numberProfile(p account.Profile) numberProfileBody {
	orNil := func(v string) *string {
		if v == "" {
			return nil
		}
		return &v
	}
	out := numberProfileBody{Name: orNil(p.Name), ImageURL: orNil(p.PictureURL)}
	if p.UpdatedAt != nil {
		out.UpdatedAt = orNil(timestamp(*p.UpdatedAt))
	}
	return out
}
