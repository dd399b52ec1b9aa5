package telegram

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/application/channels"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// Inbound modes of a bot.
const (
	ModeWebhook = "webhook"
	ModePolling = "polling"
)

// WebhookPath is the route a bot's webhook points at, under the public URL.
func WebhookPath(numberID string) string { return "/v1/providers/telegram/" + numberID + "/webhook" }

// Numbers lists the Telegram numbers and opens their settings.
type Numbers interface {
	Numbers(ctx context.Context, p account.Provider) ([]account.Number, error)
	NumberSettings(n account.Number) (map[string]string, error)
}

// Connector keeps every enabled Telegram bot connected: a bot in webhook
// mode gets its webhook set (with the secret token) once, a bot in polling
// mode gets a getUpdates loop in the one process that holds its poll
// lease (Leases). It looks for new, changed and disabled numbers every
// Rescan, and for the leases of bots it wants to poll every Claim.
type Connector struct {
	Client  *Client
	Inbound *Inbound
	Numbers Numbers
	// PublicURL is the server's public base URL; bots default to webhook
	// mode when it is set and to polling otherwise.
	PublicURL string
	// Polling false runs no pollers in this process, whatever the leases.
	Polling bool
	// Leases elect the one process that polls each bot (Telegram allows
	// one getUpdates caller per bot) and keep its offset; required when
	// Polling.
	Leases channels.PollLeases
	// Rescan is how often the numbers are read again (30 s when 0);
	// Claim, how often the free leases of bots to poll are asked for
	// (2 s when 0).
	Rescan      time.Duration
	Claim       time.Duration
	PollTimeout time.Duration
	Log         *slog.Logger

	mu sync.Mutex
	// toPoll are the bots in polling mode of the last scan, by number id.
	toPoll   map[string]pollTarget
	pollers  map[string]*poller
	webhooks map[string]string
	wg       sync.WaitGroup
	stop     context.CancelFunc
}

// pollTarget is a bot to poll, as the last scan read it.
type pollTarget struct {
	number   account.Number
	settings map[string]string
}

// poller is a running getUpdates loop.
type poller struct{ cancel context.CancelFunc }

// Start begins connecting bots in the background.
func (c *Connector) Start(context.Context) error {
	if c.Polling && c.Leases == nil {
		return errors.New("telegram: polling needs the poll leases")
	}
	if c.Rescan <= 0 {
		c.Rescan = 30 * time.Second
	}
	if c.Claim <= 0 {
		c.Claim = 2 * time.Second
	}
	if c.PollTimeout <= 0 {
		c.PollTimeout = 25 * time.Second
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	c.toPoll, c.pollers, c.webhooks = map[string]pollTarget{}, map[string]*poller{}, map[string]string{}
	ctx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		rescan, claim := time.NewTicker(c.Rescan), time.NewTicker(c.Claim)
		defer rescan.Stop()
		defer claim.Stop()
		c.scan(ctx)
		for {
			c.claim(ctx)
			select {
			case <-ctx.Done():
				return
			case <-rescan.C:
				c.scan(ctx)
			case <-claim.C:
			}
		}
	}()
	return nil
}

// Stop ends every poller and waits for them.
func (c *Connector) Stop(ctx context.Context) error {
	if c.stop == nil {
		return nil
	}
	c.stop()
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Mode is how a bot receives updates.
func (c *Connector) Mode(settings map[string]string) string {
	switch settings[SettingInbound] {
	case ModeWebhook, ModePolling:
		return settings[SettingInbound]
	}
	if c.PublicURL != "" {
		return ModeWebhook
	}
	return ModePolling
}

// scan reads the numbers: it sets the webhooks of bots in webhook mode,
// notes the bots to poll, and stops the pollers of the others.
func (c *Connector) scan(ctx context.Context) {
	numbers, err := c.Numbers.Numbers(ctx, Name)
	if err != nil {
		if ctx.Err() == nil {
			c.Log.Warn("telegram: list numbers", "error", err.Error())
		}
		return
	}
	toPoll := map[string]pollTarget{}
	for _, n := range numbers {
		if !n.Enabled {
			continue
		}
		settings, err := c.Numbers.NumberSettings(n)
		if err != nil || settings[SettingBotToken] == "" {
			continue
		}
		switch c.Mode(settings) {
		case ModeWebhook:
			c.ensureWebhook(ctx, n, settings)
		case ModePolling:
			if c.Polling {
				toPoll[n.ID] = pollTarget{number: n, settings: settings}
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.toPoll = toPoll
	for id, p := range c.pollers {
		if _, ok := toPoll[id]; !ok {
			p.cancel()
		}
	}
}

// claim starts a poller for each bot to poll whose lease this process
// takes; a bot whose lease another process holds is left to it.
func (c *Connector) claim(ctx context.Context) {
	c.mu.Lock()
	var free []pollTarget
	for id, t := range c.toPoll {
		if _, running := c.pollers[id]; !running {
			free = append(free, t)
		}
	}
	c.mu.Unlock()
	for _, t := range free {
		lease, err := c.Leases.TakePollLease(ctx, t.number.ID)
		if errors.Is(err, channels.ErrPollLeaseHeld) {
			continue
		}
		if err != nil {
			if ctx.Err() == nil && !failure.Is(err, failure.KindUnavailable) {
				c.Log.Warn("telegram: take poll lease", "number_id", t.number.ID, "error", err.Error())
			}
			return
		}
		c.startPoller(ctx, t, lease)
	}
}

// startPoller runs t's poller under lease until the lease is lost, the
// bot leaves polling mode or the connector stops; it then gives the
// lease up.
func (c *Connector) startPoller(ctx context.Context, t pollTarget, lease channels.PollLease) {
	pctx, cancel := context.WithCancel(ctx)
	p := &poller{cancel: cancel}
	c.mu.Lock()
	c.pollers[t.number.ID] = p
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.poll(pctx, t.number, t.settings, lease)
		cancel()
		releaseCtx, done := context.WithTimeout(context.Background(), 5*time.Second)
		if err := lease.Release(releaseCtx); err != nil {
			c.Log.Warn("telegram: release poll lease", "number_id", t.number.ID, "error", err.Error())
		}
		done()
		c.mu.Lock()
		if c.pollers[t.number.ID] == p {
			delete(c.pollers, t.number.ID)
		}
		c.mu.Unlock()
	}()
}

func (c *Connector) ensureWebhook(ctx context.Context, n account.Number, settings map[string]string) {
	if c.PublicURL == "" {
		c.Log.Warn("telegram: webhook mode needs the server's public URL", "number_id", n.ID)
		return
	}
	url := strings.TrimRight(c.PublicURL, "/") + WebhookPath(n.ID)
	c.mu.Lock()
	done := c.webhooks[n.ID] == url
	c.mu.Unlock()
	if done {
		return
	}
	if err := c.Client.SetWebhook(ctx, settings, url, WebhookSecret(n.ID, settings)); err != nil {
		c.Log.Warn("telegram: setWebhook", "number_id", n.ID, "error", err.Error())
		return
	}
	c.mu.Lock()
	c.webhooks[n.ID] = url
	c.mu.Unlock()
	c.Log.Info("telegram: webhook set", "number_id", n.ID, "url", url)
}

// poll long-polls one bot until ctx ends or its lease is lost. It starts
// from the offset stored with the lease, and an update is confirmed (the
// offset moves past it, in the database, then at Telegram with the next
// getUpdates) only once it is stored; a failure retries it. Before each
// getUpdates the lease is checked with the database, so a holder that
// lost it (its session ended while it stalled) asks Telegram for nothing
// more.
func (c *Connector) poll(ctx context.Context, n account.Number, settings map[string]string, lease channels.PollLease) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-lease.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	c.Log.Info("telegram: poll lease taken", "number_id", n.ID)
	defer func() {
		if isDone(lease) {
			c.Log.Warn("telegram: poll lease lost", "number_id", n.ID)
		}
	}()
	if err := c.Client.DeleteWebhook(ctx, settings); err != nil && ctx.Err() == nil {
		c.Log.Warn("telegram: deleteWebhook", "number_id", n.ID, "error", err.Error())
	}
	offset, known := int64(0), false
	backoff := time.Second
	for ctx.Err() == nil {
		err := lease.Check(ctx)
		if err == nil && !known {
			offset, err = lease.Offset(ctx)
			known = err == nil
		}
		if err == nil {
			var updates []Update
			updates, err = c.Client.GetUpdates(ctx, settings, offset, c.PollTimeout)
			for _, u := range updates {
				if err = c.Inbound.Handle(ctx, n, u); err != nil {
					break
				}
				if err = lease.Advance(ctx, u.UpdateID+1); err != nil {
					break
				}
				offset = u.UpdateID + 1
			}
		}
		if errors.Is(err, channels.ErrPollLeaseLost) {
			return
		}
		if err == nil {
			backoff = time.Second
			continue
		}
		if ctx.Err() != nil {
			return
		}
		wait := backoff
		var pe *messaging.ProviderError
		if errors.As(err, &pe) && pe.RetryAfter > 0 {
			wait = pe.RetryAfter
		}
		c.Log.Warn("telegram: polling", "number_id", n.ID, "error", err.Error(), "retry_in", wait.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}

// isDone tells whether the lease is lost or released.
func isDone(l channels.PollLease) bool {
	select {
	case <-l.Done():
		return true
	default:
		return false
	}
}
