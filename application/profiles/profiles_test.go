package profiles_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/application/profiles"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// numbers is the account use cases' side: the account's numbers, and the
// changes stored.
type numbers struct {
	list    []account.Number
	changes []account.ProfileChange
}

func (n *numbers) Numbers(context.Context, string) ([]account.Number, error) { return n.list, nil }
func (n *numbers) NumberSettings(account.Number) (map[string]string, error) {
	return map[string]string{}, nil
}
func (n *numbers) SetNumberProfile(_ context.Context, _, id string, c account.ProfileChange) (account.Number, error) {
	n.changes = append(n.changes, c)
	for _, num := range n.list {
		if num.ID == id {
			return num, nil
		}
	}
	return account.Number{}, failure.NotFound("number")
}

// provider answers with its function fields.
type provider struct {
	name    func(string) (profiles.Outcome, error)
	picture func(profiles.Picture) (profiles.Outcome, error)
}

func (p provider) SetProfileName(_ context.Context, _ account.Number, _ map[string]string, name string) (profiles.Outcome, error) {
	return p.name(name)
}
func (p provider) SetProfilePicture(_ context.Context, _ account.Number, _ map[string]string, pic profiles.Picture) (profiles.Outcome, error) {
	return p.picture(pic)
}

// pictures serves fixed bytes for every URL.
type pictures struct {
	data []byte
	err  error
}

func (p pictures) Fetch(context.Context, string, int64) (profiles.Fetched, error) {
	return profiles.Fetched{ContentType: "image/png", Data: p.data}, p.err
}

func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))))
	return b.Bytes()
}

type bundle struct {
	svc     *profiles.Service
	numbers *numbers
}

func setup(t *testing.T, p provider, pics pictures) bundle {
	t.Helper()
	n := &numbers{list: []account.Number{
		{ID: "num_tg", AccountID: "acc_1", Number: "+14155550100", Service: account.Telegram, Provider: account.ProviderTelegram},
		{ID: "num_wa", AccountID: "acc_1", Number: "+14155550100", Service: account.WhatsApp, Provider: account.ProviderWhatsAppCloud},
		{ID: "num_sb", AccountID: "acc_1", Number: "+14155550101", Service: account.WhatsApp, Provider: account.ProviderSandbox},
	}}
	svc := profiles.NewService(profiles.Deps{
		Numbers: n, Providers: map[account.Provider]profiles.Provider{account.ProviderTelegram: p, account.ProviderWhatsAppCloud: p},
		Pictures: pics, Now: func() time.Time { return time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC) },
	})
	return bundle{svc: svc, numbers: n}
}

func applied(string) (profiles.Outcome, error) { return profiles.Outcome{Applied: true}, nil }

func TestNumberChoice(t *testing.T) {
	t.Parallel()
	b := setup(t, provider{name: applied}, pictures{})
	ctx := context.Background()
	_, err := b.svc.SetName(ctx, profiles.Target{AccountID: "acc_1", AgentNumber: "+14155550100"}, "Ada")
	require.True(t, failure.Is(err, failure.KindConflict), "on two services and none named, got %v", err)
	res, err := b.svc.SetName(ctx, profiles.Target{AccountID: "acc_1", AgentNumber: "+14155550100", Service: "telegram"}, "Ada")
	require.NoError(t, err)
	require.Equal(t, "num_tg", res.Number.ID)
	_, err = b.svc.SetName(ctx, profiles.Target{AccountID: "acc_1", AgentNumber: "+14155550199"}, "Ada")
	require.True(t, failure.Is(err, failure.KindNotFound), "got %v", err)
	_, err = b.svc.SetName(ctx, profiles.Target{AccountID: "acc_1", AgentNumber: "+14155550100", Service: "sms"}, "Ada")
	require.Equal(t, "service", failure.As(err).Fields[0].Path[0])
}

// A provider without profiles stores and says so; a refusal stores
// nothing, permanent ones 502 and the rest 503 with the provider's wait.
func TestProviderOutcomes(t *testing.T) {
	t.Parallel()
	var refusal error
	b := setup(t, provider{name: func(string) (profiles.Outcome, error) { return profiles.Outcome{}, refusal }}, pictures{})
	ctx := context.Background()
	res, err := b.svc.SetName(ctx, profiles.Target{AccountID: "acc_1", AgentNumber: "+14155550101"}, " Sandy ")
	require.NoError(t, err)
	require.False(t, res.Outcome.Applied)
	require.Contains(t, res.Outcome.Reason, "sandbox provider")
	require.Equal(t, "Sandy", *b.numbers.changes[0].Name)
	require.Equal(t, time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), b.numbers.changes[0].At)

	tg := profiles.Target{AccountID: "acc_1", AgentNumber: "+14155550100", Service: "telegram"}
	refusal = &messaging.ProviderError{Code: "provider_auth_failed", Message: "telegram 401: Unauthorized", Permanent: true}
	_, err = b.svc.SetName(ctx, tg, "Ada")
	require.Equal(t, failure.KindBadGateway, failure.As(err).Kind)
	require.Equal(t, "provider_refused", failure.As(err).Code)
	refusal = &messaging.ProviderError{Code: "rate_limited", Message: "telegram 429", RetryAfter: 9 * time.Second}
	_, err = b.svc.SetName(ctx, tg, "Ada")
	require.Equal(t, failure.KindUnavailable, failure.As(err).Kind)
	require.Equal(t, 9*time.Second, failure.As(err).RetryAfter)
	require.Len(t, b.numbers.changes, 1, "no refusal was stored")
}

// A picture must decode as a JPEG or PNG within the size and side limits.
func TestPictureChecks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tg := profiles.Target{AccountID: "acc_1", AgentNumber: "+14155550100", Service: "telegram"}
	var got profiles.Picture
	p := provider{picture: func(pic profiles.Picture) (profiles.Outcome, error) {
		got = pic
		return profiles.Outcome{Applied: true}, nil
	}}
	for name, c := range map[string]struct {
		pics pictures
		want string
	}{
		"not an image":    {pictures{data: []byte("%PDF-1.7 ...")}, "JPEG or PNG"},
		"broken PNG":      {pictures{data: append([]byte("\x89PNG\r\n\x1a\n"), 0, 0, 0)}, "not a readable png"},
		"too many pixels": {pictures{data: pngOf(t, 5000, 10)}, "4096 pixels"},
		"too large":       {pictures{err: profiles.ErrPictureTooLarge}, "5 MB"},
		"forbidden":       {pictures{err: errors.Join(profiles.ErrForbiddenAddress, errors.New("10.0.0.1"))}, "not allowed"},
		"unreachable":     {pictures{err: errors.New("answered 404")}, "could not be fetched"},
	} {
		b := setup(t, p, c.pics)
		_, err := b.svc.SetPicture(ctx, tg, "https://files.example.com/p")
		fe := failure.As(err)
		require.Equal(t, failure.KindInvalid, fe.Kind, "%s: %v", name, err)
		require.Equal(t, []any{"image_url"}, fe.Fields[0].Path, name)
		require.Contains(t, fe.Fields[0].Message, c.want, name)
		require.Empty(t, b.numbers.changes, name)
	}
	b := setup(t, p, pictures{data: pngOf(t, 640, 480)})
	res, err := b.svc.SetPicture(ctx, tg, "https://files.example.com/p")
	require.NoError(t, err)
	require.True(t, res.Outcome.Applied)
	require.Equal(t, "image/png", got.ContentType)
	require.Equal(t, [2]int{640, 480}, [2]int{got.Width, got.Height})
	for _, url := range []string{"http://files.example.com/p", "ftp://files.example.com/p", "/p", "https://u:p@files.example.com/p"} {
		_, err := b.svc.SetPicture(ctx, tg, url)
		require.Equal(t, []any{"image_url"}, failure.As(err).Fields[0].Path, url)
	}
}
