// Package profiles holds the use cases of an agent number's profile: the
// display name and picture it shows its users (A1Base's profile-settings
// calls). Each change is checked, applied by the provider behind the
// number where its platform lets an API make it, then stored; the answer
// says whether it was applied and, when not, why.
package profiles

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // registers JPEG for image.DecodeConfig
	_ "image/png"  // registers PNG for image.DecodeConfig
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// Outcome is what a provider did with one field of a profile.
type Outcome struct {
	// Applied tells whether the platform shows the new value now.
	Applied bool
	// Reason says why it was not applied; empty when it was.
	Reason string
}

// Picture is a profile picture fetched from the customer's URL: a JPEG or
// a PNG image whose bytes decode.
type Picture struct {
	URL string
	// ContentType is image/jpeg or image/png, from the bytes.
	ContentType   string
	Data          []byte
	Width, Height int
}

// Provider is what a channel provider implements to apply an agent
// number's profile on its platform. A provider without it stores the
// profile and answers Applied false. Both methods return Applied false
// with a Reason for a change the platform does not let an API make (or
// that the number's settings do not allow), and an error, a
// *messaging.ProviderError when the provider explained it, when the
// platform refused or failed.
type Provider interface {
	SetProfileName(ctx context.Context, n account.Number, settings map[string]string, name string) (Outcome, error)
	SetProfilePicture(ctx context.Context, n account.Number, settings map[string]string, p Picture) (Outcome, error)
}

// Numbers are the agent numbers of the account use cases: the write of a
// profile goes through them.
type Numbers interface {
	// Numbers lists an account's agent numbers; NotFound for an account
	// that does not exist.
	Numbers(ctx context.Context, accountID string) ([]account.Number, error)
	// NumberSettings opens a number's sealed provider settings.
	NumberSettings(n account.Number) (map[string]string, error)
	// SetNumberProfile stores the fields of the profile of the account's
	// number numberID that change names, and returns the number. NotFound.
	SetNumberProfile(ctx context.Context, accountID, numberID string, change account.ProfileChange) (account.Number, error)
}

// Pictures fetch a customer's picture URL through the SSRF-safe client
// (every dial checked again, redirects included), reading at most maxBytes.
// A larger declared length or more bytes sent is ErrPictureTooLarge; an
// address in a forbidden range is an error that wraps ErrForbiddenAddress;
// any other failure (a 4xx or 5xx answer, the network) is an error that
// says what happened.
type Pictures interface {
	Fetch(ctx context.Context, rawURL string, maxBytes int64) (Fetched, error)
}

// Fetched is what a picture URL answered: its declared content type and
// its bytes.
type Fetched struct {
	ContentType string
	Data        []byte
}

// ErrPictureTooLarge is the failure of a fetch over the size limit.
var ErrPictureTooLarge = errors.New("the picture is larger than the limit")

// ErrForbiddenAddress is wrapped by a fetch refused for the address it
// would connect to.
var ErrForbiddenAddress = errors.New("forbidden address")

// URLChecker refuses URLs on private, loopback or link-local addresses at
// request time.
type URLChecker interface {
	CheckURL(ctx context.Context, raw string) error
}

// MaxPictureBytes bounds a profile picture: 5 MB, the image limit of the
// channels.
const MaxPictureBytes = 5 << 20

// MaxPictureSide bounds a profile picture's width and height, in pixels,
// so that decoding one (to convert it) takes bounded memory.
const MaxPictureSide = 4096

// maxURLLength bounds image_url, as media URLs are.
const maxURLLength = 2048

// Deps are what the profile use cases are built from.
type Deps struct {
	Numbers   Numbers
	Providers map[account.Provider]Provider
	Pictures  Pictures
	URLs      URLChecker
	// PlainHTTPAllowed says whether a picture may be fetched over plain
	// http from host (hosts in the operator's allowed private ranges);
	// nil allows https only.
	PlainHTTPAllowed func(host string) bool
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Service runs the profile use cases.
type Service struct {
	numbers      Numbers
	providers    map[account.Provider]Provider
	pictures     Pictures
	urls         URLChecker
	plainAllowed func(host string) bool
	now          func() time.Time
}

// NewService builds the profile use cases.
func NewService(d Deps) *Service {
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Service{numbers: d.Numbers, providers: d.Providers, pictures: d.Pictures, urls: d.URLs, plainAllowed: d.PlainHTTPAllowed, now: d.Now}
}

// Target names the agent number whose profile changes: an E.164 number of
// the account and, when the account has that number on several services,
// the service.
type Target struct {
	AccountID   string
	AgentNumber string
	// Service is empty or whatsapp or telegram.
	Service string
}

// Result is a number after a change of its profile, the field that
// changed (name or image_url) and what its provider did with it.
type Result struct {
	Number  account.Number
	Field   string
	Outcome Outcome
}

// SetName makes name the display name of the agent number: checked (not
// blank, within the service's length), applied by the number's provider
// where its platform allows, then stored.
//
// Errors: Invalid naming agent_number, service or name; NotFound when the
// account has no such number; Conflict (ambiguous_number) when it has it
// on several services and no service is given; BadGateway
// (provider_refused) or Unavailable (provider_unavailable) when the
// provider refused or failed, and then nothing is stored.
func (s *Service) SetName(ctx context.Context, t Target, name string) (Result, error) {
	var p failure.Problems
	checkTarget(&p, t)
	if strings.TrimSpace(name) == "" {
		p.Add("string_too_short", "name must not be empty", "name")
	}
	if err := p.Err(); err != nil {
		return Result{}, err
	}
	n, err := s.number(ctx, t)
	if err != nil {
		return Result{}, err
	}
	name, err = account.CheckProfileName(name, n.Service)
	if err != nil {
		return Result{}, err
	}
	return s.apply(ctx, n, "name", account.ProfileChange{Name: &name}, func(pr Provider, settings map[string]string) (Outcome, error) {
		return pr.SetProfileName(ctx, n, settings, name)
	})
}

// SetPicture makes the image at imageURL the profile picture of the agent
// number: the URL is checked (https, or http to a host in the allowed
// private ranges; not into a forbidden range), the picture fetched through
// the SSRF-safe client (at most 5 MB, a JPEG or PNG image), applied by the
// number's provider where its platform allows, and the URL stored.
//
// Errors: those of SetName, image_url in place of name.
func (s *Service) SetPicture(ctx context.Context, t Target, imageURL string) (Result, error) {
	var p failure.Problems
	checkTarget(&p, t)
	if err := s.checkPictureURL(imageURL); err != nil {
		p = append(p, failure.As(err).Fields...)
	}
	if err := p.Err(); err != nil {
		return Result{}, err
	}
	if s.urls != nil {
		if err := s.urls.CheckURL(ctx, imageURL); err != nil {
			return Result{}, failure.Invalid(failure.Field("url_forbidden", "image_url is not allowed: "+err.Error(), "image_url"))
		}
	}
	n, err := s.number(ctx, t)
	if err != nil {
		return Result{}, err
	}
	picture, err := s.fetchPicture(ctx, imageURL)
	if err != nil {
		return Result{}, err
	}
	return s.apply(ctx, n, "image_url", account.ProfileChange{PictureURL: &imageURL}, func(pr Provider, settings map[string]string) (Outcome, error) {
		return pr.SetProfilePicture(ctx, n, settings, picture)
	})
}

// Set sets the name and then the picture that are not nil (SetName, then
// SetPicture) and returns each one's result, in that order; when the
// picture then fails, the name stays set. Neither given is Invalid naming
// name.
func (s *Service) Set(ctx context.Context, t Target, name, imageURL *string) ([]Result, error) {
	if name == nil && imageURL == nil {
		return nil, failure.Invalid(failure.Field("missing", "name or image_url is required", "name"))
	}
	var out []Result
	if name != nil {
		res, err := s.SetName(ctx, t, *name)
		if err != nil {
			return nil, err
		}
		out = append(out, res)
	}
	if imageURL != nil {
		res, err := s.SetPicture(ctx, t, *imageURL)
		if err != nil {
			return nil, err
		}
		out = append(out, res)
	}
	return out, nil
}

// checkTarget checks the number and service a change names.
func checkTarget(p *failure.Problems, t Target) {
	switch {
	case strings.TrimSpace(t.AgentNumber) == "":
		p.Add("missing", "agent_number is required", "agent_number")
	case !account.ValidE164(t.AgentNumber):
		p.Add("value_error", "agent_number must be an agent number in E.164 form, e.g. +14155550100", "agent_number")
	}
	if _, ok := account.ParseService(t.Service); t.Service != "" && !ok {
		p.Add("enum", "service must be one of whatsapp, telegram", "service")
	}
}

// checkPictureURL checks image_url's form: an absolute https URL, or http
// to a host the operator allows plain http to.
func (s *Service) checkPictureURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case strings.TrimSpace(raw) == "":
		return failure.Invalid(failure.Field("missing", "image_url is required", "image_url"))
	case len(raw) > maxURLLength:
		return failure.Invalid(failure.Field("string_too_long", fmt.Sprintf("image_url must be at most %d characters", maxURLLength), "image_url"))
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return failure.Invalid(failure.Field("url_parsing", "image_url must be a complete https:// URL", "image_url"))
	case u.User != nil:
		return failure.Invalid(failure.Field("url_parsing", "image_url must not contain credentials", "image_url"))
	case u.Scheme == "http" && (s.plainAllowed == nil || !s.plainAllowed(u.Hostname())):
		return failure.Invalid(failure.Field("url_scheme", "image_url must use https:// (plain http only for hosts in the allowed private ranges)", "image_url"))
	}
	return nil
}

// fetchPicture fetches the picture and checks that it is a JPEG or PNG
// image within the size limit.
func (s *Service) fetchPicture(ctx context.Context, imageURL string) (Picture, error) {
	invalid := func(typ, msg string) error { return failure.Invalid(failure.Field(typ, msg, "image_url")) }
	f, err := s.pictures.Fetch(ctx, imageURL, MaxPictureBytes)
	switch {
	case errors.Is(err, ErrPictureTooLarge):
		return Picture{}, invalid("value_error", "image_url: pictures may be at most 5 MB")
	case errors.Is(err, ErrForbiddenAddress):
		return Picture{}, invalid("url_forbidden", "image_url is not allowed: "+err.Error())
	case err != nil:
		if ctx.Err() != nil {
			return Picture{}, ctx.Err()
		}
		return Picture{}, invalid("value_error", "image_url could not be fetched: "+err.Error())
	}
	sniffed := http.DetectContentType(f.Data)
	if sniffed != "image/jpeg" && sniffed != "image/png" {
		got := f.ContentType
		if got == "" || strings.HasPrefix(got, "image/") {
			got = sniffed
		}
		return Picture{}, invalid("value_error", "image_url must be a JPEG or PNG image, got "+got)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(f.Data))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return Picture{}, invalid("value_error", "image_url is not a readable "+strings.TrimPrefix(sniffed, "image/")+" image")
	}
	if cfg.Width > MaxPictureSide || cfg.Height > MaxPictureSide {
		return Picture{}, invalid("value_error", fmt.Sprintf("image_url: pictures may be at most %d pixels wide and high, got %dx%d", MaxPictureSide, cfg.Width, cfg.Height))
	}
	return Picture{URL: imageURL, ContentType: sniffed, Data: f.Data, Width: cfg.Width, Height: cfg.Height}, nil
}

// number finds the account's agent number the target names.
func (s *Service) number(ctx context.Context, t Target) (account.Number, error) {
	numbers, err := s.numbers.Numbers(ctx, t.AccountID)
	if err != nil {
		return account.Number{}, err
	}
	var found []account.Number
	for _, n := range numbers {
		if n.Number == t.AgentNumber && (t.Service == "" || string(n.Service) == t.Service) {
			found = append(found, n)
		}
	}
	switch len(found) {
	case 0:
		return account.Number{}, &failure.Error{Kind: failure.KindNotFound, Code: "not_found", Message: "agent_number " + t.AgentNumber + " is not a number of this account"}
	case 1:
		return found[0], nil
	}
	return account.Number{}, failure.Conflict("ambiguous_number", t.AgentNumber+" is registered on several services; name one with service")
}

// apply asks the number's provider to make the change, then stores it.
// A provider refusal stores nothing.
func (s *Service) apply(ctx context.Context, n account.Number, field string, change account.ProfileChange, call func(Provider, map[string]string) (Outcome, error)) (Result, error) {
	var out Outcome
	if pr, ok := s.providers[n.Provider]; ok {
		settings, err := s.numbers.NumberSettings(n)
		if err != nil {
			return Result{}, err
		}
		if out, err = call(pr, settings); err != nil {
			return Result{}, providerFailure(field, err)
		}
	} else {
		out = Outcome{Reason: fmt.Sprintf("the %s provider cannot change a profile", n.Provider)}
	}
	change.At = s.now().UTC()
	stored, err := s.numbers.SetNumberProfile(ctx, n.AccountID, n.ID, change)
	if err != nil {
		return Result{}, err
	}
	return Result{Number: stored, Field: field, Outcome: out}, nil
}

// providerFailure is the failure of a change its provider refused or
// failed: permanent refusals are 502 provider_refused, the rest 503
// provider_unavailable with the provider's Retry-After.
func providerFailure(field string, err error) error {
	var pe *messaging.ProviderError
	if !errors.As(err, &pe) {
		return err
	}
	what := map[string]string{"name": "the profile name", "image_url": "the profile picture"}[field]
	if pe.Permanent {
		return &failure.Error{Kind: failure.KindBadGateway, Code: "provider_refused",
			Message: "the provider refused " + what + " (" + pe.Code + "): " + pe.Message, Err: err}
	}
	return &failure.Error{Kind: failure.KindUnavailable, Code: "provider_unavailable",
		Message: "the provider could not set " + what + " now (" + pe.Code + "): " + pe.Message, RetryAfter: pe.RetryAfter, Err: err}
}
