package graph

import (
	"context"

	"github.com/switchboard-dev/switchboard/application/idempotency"
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
	RotateSecret(ctx context.Context, accountID string) (appwebhooks.View, error)
	// Test's and Replay's answer records an Idempotency-Key's answer
	// (REST's); GraphQL has no keys and passes nil.
	Test(ctx context.Context, accountID string, answer *idempotency.Completion[webhook.Delivery]) (webhook.Delivery, error)
	Deliveries(ctx context.Context, q appwebhooks.DeliveryQuery) ([]webhook.Delivery, int, error)
	Replay(ctx context.Context, accountID, id string, answer *idempotency.Completion[webhook.Delivery]) (webhook.Delivery, error)
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
