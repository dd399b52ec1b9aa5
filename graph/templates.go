package graph

import (
	"context"

	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// TemplateCatalog serves the message template fields; *messaging.Service
// implements it. Without one they answer not_implemented.
type TemplateCatalog interface {
	Templates(ctx context.Context, f appmessaging.TemplateFilter) ([]messaging.Template, error)
	SyncTemplates(ctx context.Context, accountID, number string) ([]messaging.Template, error)
}

var _ TemplateCatalog = (*appmessaging.Service)(nil)

var errNoTemplates = &failure.Error{Kind: failure.KindNotImplemented, Code: "templates_unavailable", Message: "message templates are not configured"}

// listedTemplates are templates as the schema lists them: every list
// present, empty when the provider gave none.
func listedTemplates(ts []messaging.Template) []messaging.Template {
	out := make([]messaging.Template, len(ts))
	for i, t := range ts {
		components := make([]messaging.TemplateComponent, len(t.Components))
		for j, c := range t.Components {
			if c.Buttons == nil {
				c.Buttons = []messaging.TemplateButton{}
			}
			components[j] = c
		}
		t.Components = components
		out[i] = t
	}
	return out
}
