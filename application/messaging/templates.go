package messaging

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// TemplateFilter selects an account's message templates: those of the
// agent number Number (E.164) when it is set, and with exactly the Name,
// Language and Status that are set.
type TemplateFilter struct {
	AccountID string
	Number    string
	Name      string
	Language  string
	Status    string
}

// Templates lists the account's message templates as last synced, by
// agent number, name and language. A Number that is not one of the
// account's WhatsApp numbers is NotFound.
func (s *Service) Templates(ctx context.Context, f TemplateFilter) ([]messaging.Template, error) {
	q := TemplateQuery{AccountID: f.AccountID, Name: f.Name, Language: f.Language, Status: f.Status}
	if f.Number != "" {
		n, err := s.templateNumber(ctx, f.AccountID, f.Number)
		if err != nil {
			return nil, err
		}
		q.NumberID = n.ID
	}
	return s.store.Repos().Templates(ctx, q)
}

// templateNumber is the account's WhatsApp number a template filter or
// sync names.
func (s *Service) templateNumber(ctx context.Context, accountID, number string) (account.Number, error) {
	if !account.ValidE164(number) {
		return account.Number{}, failure.Invalid(failure.FieldError{In: "query", Path: []any{"number"}, Type: "value_error",
			Message: "number must be an agent number in E.164 form, e.g. +14155550100"})
	}
	n, err := s.store.Repos().NumberByAddress(ctx, account.WhatsApp, number)
	if failure.Is(err, failure.KindNotFound) || (err == nil && n.AccountID != accountID) {
		return account.Number{}, failure.NotFound("WhatsApp agent number " + number)
	}
	return n, err
}

// SyncTemplates fetches the templates of the account's enabled WhatsApp
// numbers whose provider has templates (or of the one Number names) from
// the provider, and keeps them: each number's set replaces the one kept
// before. It answers the templates it kept. A Number whose provider has
// no templates is NotImplemented; a provider's refusal is Unavailable
// provider_refused, and nothing is kept.
func (s *Service) SyncTemplates(ctx context.Context, accountID, number string) ([]messaging.Template, error) {
	var numbers []account.Number
	if number != "" {
		n, err := s.templateNumber(ctx, accountID, number)
		if err != nil {
			return nil, err
		}
		numbers = []account.Number{n}
	} else {
		all, err := s.store.Repos().AccountNumbers(ctx, accountID)
		if err != nil {
			return nil, err
		}
		for _, n := range all {
			if provider, ok := s.providers.Provider(n.Provider); ok && n.Service == account.WhatsApp && n.Enabled {
				if _, templates := provider.(TemplateProvider); templates {
					numbers = append(numbers, n)
				}
			}
		}
	}
	now := s.now().UTC()
	var (
		b    writes.Batch
		kept []messaging.Template
	)
	for _, n := range numbers {
		templates, err := s.fetchTemplates(ctx, n)
		if err != nil {
			return nil, err
		}
		for i := range templates {
			templates[i].AccountID, templates[i].NumberID, templates[i].Number, templates[i].SyncedAt = accountID, n.ID, n.Number, now
		}
		b.TemplateSets = append(b.TemplateSets, writes.TemplateSet{AccountID: accountID, NumberID: n.ID, Templates: templates, SyncedAt: now})
		kept = append(kept, templates...)
	}
	if err := s.committer.Commit(ctx, b); err != nil {
		return nil, err
	}
	slices.SortStableFunc(kept, func(a, b messaging.Template) int {
		return strings.Compare(a.Number+"\x00"+a.Name+"\x00"+a.Language, b.Number+"\x00"+b.Name+"\x00"+b.Language)
	})
	return kept, nil
}

// fetchTemplates asks the number's provider for its templates.
func (s *Service) fetchTemplates(ctx context.Context, n account.Number) ([]messaging.Template, error) {
	provider, ok := s.providers.Provider(n.Provider)
	tp, templates := provider.(TemplateProvider)
	if !ok || !templates {
		return nil, &failure.Error{Kind: failure.KindNotImplemented, Code: "not_supported_by_provider",
			Message: fmt.Sprintf("the %s provider of %s has no message templates", n.Provider, n.Number)}
	}
	if !n.Enabled {
		return nil, failure.Forbidden("number_disabled", "agent number "+n.Number+" is disabled")
	}
	settings, err := s.opener.NumberSettings(n)
	if err != nil {
		return nil, err
	}
	list, err := tp.Templates(ctx, n, settings)
	if err != nil {
		return nil, providerRefused("the templates of "+n.Number, err)
	}
	return list, nil
}

// checkTemplateForm checks the form of a template send (see
// messaging.CheckTemplateSend), and that it goes out on WhatsApp.
func checkTemplateForm(send messaging.TemplateSend, field []any, notWhatsApp bool, p *failure.Problems) {
	if notWhatsApp {
		p.Add("value_error", "templates are sent on whatsapp only", "service")
	}
	if err := messaging.CheckTemplateSend(send, field...); err != nil {
		*p = append(*p, failure.As(err).Fields...)
	}
}

// templateContent is the content of a send of the number's template: the
// synced template of the send's name and language, which must be approved
// and be given each of its parameters.
func (s *Service) templateContent(ctx context.Context, n account.Number, send messaging.TemplateSend, field []any) (messaging.Content, error) {
	at := func(name string) []any { return append(append([]any{}, field...), name) }
	named, err := s.store.Repos().Templates(ctx, TemplateQuery{AccountID: n.AccountID, NumberID: n.ID, Name: send.Name})
	if err != nil {
		return messaging.Content{}, err
	}
	if len(named) == 0 {
		return messaging.Content{}, failure.Invalid(failure.Field("template_not_found",
			fmt.Sprintf("%s has no template named %q (templates are those of the last sync: POST /v1/templates/{accountId}/sync)", n.Number, send.Name), at("name")...))
	}
	i := slices.IndexFunc(named, func(t messaging.Template) bool { return t.Language == send.Language })
	if i < 0 {
		languages := make([]string, len(named))
		for j, t := range named {
			languages[j] = t.Language
		}
		return messaging.Content{}, failure.Invalid(failure.Field("template_language",
			fmt.Sprintf("template %s has no language %q; it has %s", send.Name, send.Language, strings.Join(languages, ", ")), at("language")...))
	}
	t := named[i]
	if err := t.CheckSend(send, field...); err != nil {
		return messaging.Content{}, err
	}
	return messaging.Content{Kind: messaging.KindTemplate, Text: t.Rendered(send), Template: &send}, nil
}
