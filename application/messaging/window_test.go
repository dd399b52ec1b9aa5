package messaging_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// windowedProvider is a provider with a customer service window and
// templates, as the WhatsApp Cloud API has.
type windowedProvider struct {
	fakeProvider
	templates []domain.Template
}

func (windowedProvider) ServiceWindow() time.Duration { return 24 * time.Hour }

func (w windowedProvider) Templates(context.Context, account.Number, map[string]string) ([]domain.Template, error) {
	return w.templates, nil
}

func (w windowedProvider) SendTemplate(ctx context.Context, m messaging.Outbound) (messaging.Receipt, error) {
	return w.send(ctx, m)
}

// The window opens from the provider's time of the user's message, never
// moves back, refuses free-form sends once closed (with when it closed),
// and lets a template through; the user's next message opens it again.
func TestWindowRefusesFreeFormAndLetsTemplatesThrough(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	p := windowedProvider{fakeProvider: *b.provider, templates: []domain.Template{{Name: "welcome", Language: "en", Status: domain.TemplateApproved,
		Components: []domain.TemplateComponent{{Type: "BODY", Text: "Welcome back, {{1}}!"}}}}}
	svc := messaging.NewService(messaging.Deps{Committer: b.db, Store: b.db.MessagingStore(),
		Providers: messaging.ProviderSet{b.number.Provider: p}, Opener: b.accounts})
	receive := func(sentAt time.Time) {
		t.Helper()
		_, err := svc.Receive(ctx, messaging.InboundInput{AccountID: b.account.ID, Service: "whatsapp", From: "+14155550111", To: b.number.Number,
			Content: domain.Content{Kind: domain.KindText, Text: "hi"}, SentAt: sentAt})
		require.NoError(t, err)
	}
	send := func(in messaging.SendInput) error {
		in.AccountID, in.Service, in.From, in.To = b.account.ID, "whatsapp", b.number.Number, "+14155550111"
		_, err := svc.SendIndividual(ctx, in)
		return err
	}
	text := messaging.SendInput{Content: domain.Content{Kind: domain.KindText, Text: "hello"}}

	wrote := time.Now().Add(-25 * time.Hour).Truncate(time.Second).UTC()
	receive(wrote)
	receive(wrote.Add(-time.Hour)) // an older message delivered late
	err := send(text)
	fe := failure.As(err)
	require.Equal(t, failure.KindConflict, fe.Kind, "got %v", err)
	require.Equal(t, "window_closed", fe.Code)
	require.Equal(t, map[string]string{"window_closed_at": wrote.Add(24 * time.Hour).Format(time.RFC3339)}, fe.Details)

	_, err = svc.SyncTemplates(ctx, b.account.ID, "")
	require.NoError(t, err)
	require.NoError(t, send(messaging.SendInput{Template: &domain.TemplateSend{Name: "welcome", Language: "en", Components: []domain.TemplateSendComponent{
		{Type: "body", Parameters: []domain.TemplateParameter{{Type: "text", Text: "Ann"}}}}}}), "a template goes when the window is closed")
	require.True(t, failure.Is(send(messaging.SendInput{Template: &domain.TemplateSend{Name: "welcome", Language: "en"}}), failure.KindInvalid),
		"a template without its parameter is invalid")

	receive(time.Time{}) // a message the provider gives no time: it was sent now
	require.NoError(t, send(text), "the user's message opened the window again")
}
