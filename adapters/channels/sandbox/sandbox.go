// Package sandbox is the channel provider that talks to nobody: it accepts
// every well-formed message and reports it delivered at once, so that a
// developer (or a test) can use the whole API without a WhatsApp or
// Telegram account. A few reserved recipient numbers simulate failures,
// like the test numbers of hosted messaging APIs:
//
//	+15005550001  the recipient cannot be reached: the message fails at once
//	+15005550009  the channel is down: every attempt fails and is retried
//	+15005550429  the channel is rate limited: retry after one second
package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// Reserved recipients that simulate failures.
const (
	UnreachableNumber = "+15005550001"
	DownNumber        = "+15005550009"
	RateLimitedNumber = "+15005550429"
)

// Name is the provider name agent numbers use.
const Name = account.ProviderSandbox

// Provider is the sandbox channel.
type Provider struct{}

var _ messaging.Provider = Provider{}

// Capabilities: the sandbox sends everything, groups included.
func (Provider) Capabilities() messaging.Capabilities {
	return messaging.Capabilities{
		Kinds:  []domain.Kind{domain.KindText, domain.KindImage, domain.KindVideo, domain.KindAudio, domain.KindDocument, domain.KindLocation},
		Groups: true,
	}
}

// Send accepts the message and reports it delivered.
func (Provider) Send(ctx context.Context, m messaging.Outbound) (messaging.Receipt, error) {
	if err := ctx.Err(); err != nil {
		return messaging.Receipt{}, err
	}
	switch m.To {
	case UnreachableNumber:
		return messaging.Receipt{}, &messaging.ProviderError{Code: "recipient_unreachable", Message: "the sandbox recipient " + m.To + " cannot be reached", Permanent: true}
	case DownNumber:
		return messaging.Receipt{}, &messaging.ProviderError{Code: "provider_unavailable", Message: "the sandbox channel is down for " + m.To}
	case RateLimitedNumber:
		return messaging.Receipt{}, &messaging.ProviderError{Code: "rate_limited", Message: "the sandbox channel is rate limited", RetryAfter: time.Second}
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	return messaging.Receipt{ProviderMessageID: "sbx_" + hex.EncodeToString(b[:]), Status: domain.Delivered}, nil
}

var _ messaging.GroupProvider = Provider{}

// ApplyGroupChange accepts every group action: the sandbox's groups exist
// only in Switchboard's own tables.
func (Provider) ApplyGroupChange(ctx context.Context, _ messaging.GroupChange) error {
	return ctx.Err()
}
