package telegram

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
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
// mode gets a getUpdates loop. It looks for new, changed and disabled
// numbers every Rescan.
type Connector struct {
	Client  *Client
	Inbound *Inbound
	Numbers Numbers
	// PublicURL is the server's public base URL; bots default to webhook
	// mode when it is set and to polling otherwise.
	PublicURL string
	// Polling false runs no pollers in this process (run them in one
	// replica only: Telegram allows one getUpdates caller per bot).
	Polling     bool
	Rescan      time.Duration
	PollTimeout time.Duration
	Log         *slog.Logger

	mu       sync.Mutex
	pollers  map[string]context.CancelFunc
	webhooks map[string]string
	wg       sync.WaitGroup
	stop     context.CancelFunc
}

// Start begins connecting bots in the background.
func (c *Connector) Start(context.Context) error {
	if c.Rescan <= 0 {
		c.Rescan = 30 * time.Second
	}
	if c.PollTimeout <= 0 {
		c.PollTimeout = 25 * time.Second
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	c.pollers, c.webhooks = map[string]context.CancelFunc{}, map[string]string{}
	ctx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for {
			c.scan(ctx)
			select {
			case <-ctx.Done():
				return
			case <-time.After(c.Rescan):
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

func (c *Connector) scan(ctx context.Context) {
	numbers, err := c.Numbers.Numbers(ctx, Name)
	if err != nil {
		if ctx.Err() == nil {
			c.Log.Warn("telegram: list numbers", "error", err.Error())
		}
		return
	}
	wanted := map[string]bool{}
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
				wanted[n.ID] = true
				c.ensurePoller(ctx, n, settings)
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, cancel := range c.pollers {
		if !wanted[id] {
			cancel()
			delete(c.pollers, id)
		}
	}
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

func (c *Connector) ensurePoller(ctx context.Context, n account.Number, settings map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, running := c.pollers[n.ID]; running {
		return
	}
	pctx, cancel := context.WithCancel(ctx)
	c.pollers[n.ID] = cancel
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.poll(pctx, n, settings)
	}()
}

// poll long-polls one bot until ctx ends. An update is confirmed (the
// offset moves past it) only once it is stored; a failure retries it.
func (c *Connector) poll(ctx context.Context, n account.Number, settings map[string]string) {
	if err := c.Client.DeleteWebhook(ctx, settings); err != nil && ctx.Err() == nil {
		c.Log.Warn("telegram: deleteWebhook", "number_id", n.ID, "error", err.Error())
	}
	var offset int64
	backoff := time.Second
	for ctx.Err() == nil {
		updates, err := c.Client.GetUpdates(ctx, settings, offset, c.PollTimeout)
		for _, u := range updates {
			if err = c.Inbound.Handle(ctx, n, u); err != nil {
				break
			}
			offset = u.UpdateID + 1
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
