package graph

import (
	"context"

	appwebhooks "github.com/switchboard-dev/switchboard/application/webhooks"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/webhook"
	"github.com/switchboard-dev/switchboard/graph/model"
)

// WebhookUseCases are the webhook settings and delivery log use cases, as
// REST uses them; *webhooks.Service implements them.
type WebhookUseCases interface {
	Get(ctx context.Context, accountID string) (appwebhooks.View, error)
	Put(ctx context.Context, in appwebhooks.PutInput) (appwebhooks.View, error)
	Deliveries(ctx context.Context, q appwebhooks.DeliveryQuery) ([]webhook.Delivery, int, error)
}

var _ WebhookUseCases = (*appwebhooks.Service)(nil)

// errNoWebhooks answers the webhook fields of an app built without them.
var errNoWebhooks = &failure.Error{Kind: failure.KindNotImplemented, Code: "webhooks_unavailable", Message: "webhooks are not configured"}

func webhookDeliveryConnection(ds []webhook.Delivery, offset, total int) *model.WebhookDeliveryConnection {
	info, cursors := offsetPageInfo("w", offset, len(ds), total)
	c := &model.WebhookDeliveryConnection{Nodes: ds, PageInfo: info, TotalCount: total, Edges: make([]model.WebhookDeliveryEdge, len(ds))}
	if c.Nodes == nil {
		c.Nodes = []webhook.Delivery{}
	}
	for i := range ds {
		c.Edges[i] = model.WebhookDeliveryEdge{Cursor: cursors[i], Node: &ds[i]}
	}
	return c
}
