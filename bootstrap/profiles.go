package bootstrap

import (
	"time"

	"go.uber.org/fx"

	"github.com/switchboard-dev/switchboard/adapters/channels/sandbox"
	"github.com/switchboard-dev/switchboard/adapters/channels/telegram"
	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest"
	"github.com/switchboard-dev/switchboard/adapters/httpguard"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/profiles"
	"github.com/switchboard-dev/switchboard/domain/account"
)

// pictureFetchTimeout bounds the download of a profile picture.
const pictureFetchTimeout = 30 * time.Second

// profilesModule wires the profile use cases (an agent number's display
// name and picture) over the account use cases, the providers that apply
// a profile and the SSRF guard, for the REST handler set.
var profilesModule = fx.Module("profiles",
	fx.Provide(
		func(c Config, a *accounts.Service, tg *telegram.Provider, wa *whatsapp.Provider, g *httpguard.Guard) *profiles.Service {
			return profiles.NewService(profiles.Deps{
				Numbers: a,
				Providers: map[account.Provider]profiles.Provider{
					sandbox.Name: sandbox.Provider{}, telegram.Name: tg, whatsapp.Name: wa,
				},
				Pictures:         httpguard.Pictures{Fetcher: g.NewFetcher(pictureFetchTimeout)},
				URLs:             g,
				PlainHTTPAllowed: plainHTTPAllowed(c.AllowPrivateURLs),
			})
		},
	),
	fx.Provide(fx.Annotate(func(s *profiles.Service) *profiles.Service { return s }, fx.As(new(rest.ProfileUseCases)))),
)
