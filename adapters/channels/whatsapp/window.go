package whatsapp

import (
	"time"

	"github.com/switchboard-dev/switchboard/application/messaging"
)

// CustomerServiceWindow is how long after a user's message the Cloud API
// accepts free-form messages to them; after it only template messages
// (error 131047, re-engagement message, otherwise).
const CustomerServiceWindow = 24 * time.Hour

var _ messaging.Windowed = (*Provider)(nil)

// ServiceWindow is the customer service window: 24 hours from the
// timestamp of the user's last message.
func (p *Provider) ServiceWindow() time.Duration { return CustomerServiceWindow }
