package messaging

import (
	"slices"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// Contact is one person of an account, whichever channels and numbers
// they write from: their phone numbers, WhatsApp business-scoped user id
// and username, Telegram user id and username, and display name. Inbound
// traffic creates and updates contacts; a number-change notice adds the
// new number; two contacts found to be one person are merged.
type Contact struct {
	ID        string
	AccountID string
	Name      string
	// Phones are the person's phone numbers in E.164 form, oldest first.
	Phones           []string
	WhatsAppUserID   string
	WhatsAppUsername string
	TelegramUserID   string
	// TelegramUsername is lower-case, without the @.
	TelegramUsername string
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// MaxContactNameLength bounds a contact's display name, in characters.
const MaxContactNameLength = 200

// Sighting is what an inbound message showed about its sender.
type Sighting struct {
	Service account.Service
	// Address is the thread's user: a phone number, a WhatsApp user id, a
	// Telegram chat id, or UnknownSender.
	Address  string
	Phone    string
	UserID   string
	Username string
	Name     string
}

// Identity is what finds the contact of a sighting: its phone number,
// WhatsApp user id or Telegram user id (each empty when not shown).
func (s Sighting) Identity() Identity {
	id := Identity{Phone: s.Phone}
	switch {
	case s.Service == account.WhatsApp:
		id.WhatsAppUserID = s.UserID
	case s.Service == account.Telegram && telegramUserID(s.Address):
		id.TelegramUserID = s.Address
	}
	if id.Phone == "" && account.ValidE164(s.Address) {
		id.Phone = s.Address
	}
	return id
}

// Identity names a person by any of their ids.
type Identity struct {
	Phone          string
	WhatsAppUserID string
	TelegramUserID string
}

// Empty reports whether the identity names no one (the unknown sender).
func (i Identity) Empty() bool { return i == Identity{} }

// telegramUserID reports whether address is a Telegram user's chat id
// (positive; groups are negative).
func telegramUserID(address string) bool {
	return address != "" && !strings.HasPrefix(address, "-") && telegramChat.MatchString(address) && !strings.HasPrefix(address, "@")
}

// NewContact is the contact of a person first seen in s at now.
func NewContact(id, accountID string, s Sighting, now time.Time) Contact {
	c := Contact{ID: id, AccountID: accountID, CreatedAt: now, UpdatedAt: now}
	c.See(s, now)
	if c.Name == "" {
		c.Name = s.Address
	}
	return c
}

// See records what s showed about the person; it reports whether the
// contact changed. Empty values keep what was known; a name the user
// shows replaces the one they showed before.
func (c *Contact) See(s Sighting, now time.Time) bool {
	before := c.clone()
	id := s.Identity()
	c.AddPhone(id.Phone)
	set := func(field *string, v string) {
		if v != "" {
			*field = v
		}
	}
	set(&c.WhatsAppUserID, id.WhatsAppUserID)
	set(&c.TelegramUserID, id.TelegramUserID)
	switch s.Service {
	case account.WhatsApp:
		set(&c.WhatsAppUsername, strings.TrimPrefix(s.Username, "@"))
	case account.Telegram:
		set(&c.TelegramUsername, strings.ToLower(strings.TrimPrefix(s.Username, "@")))
	}
	set(&c.Name, truncateRunes(strings.TrimSpace(s.Name), MaxContactNameLength))
	if c.equal(before) {
		return false
	}
	c.UpdatedAt = now
	return true
}

// AddPhone adds a phone number the person has (nothing for an empty one
// or one known).
func (c *Contact) AddPhone(phone string) {
	if phone != "" && !slices.Contains(c.Phones, phone) {
		c.Phones = append(c.Phones, phone)
	}
}

// Absorb merges o, another contact of the same person, into c: c keeps
// its values and takes o's where it has none; the phone numbers of both
// stay.
func (c *Contact) Absorb(o Contact, now time.Time) {
	for _, p := range o.Phones {
		c.AddPhone(p)
	}
	take := func(field *string, v string) {
		if *field == "" {
			*field = v
		}
	}
	take(&c.Name, o.Name)
	take(&c.WhatsAppUserID, o.WhatsAppUserID)
	take(&c.WhatsAppUsername, o.WhatsAppUsername)
	take(&c.TelegramUserID, o.TelegramUserID)
	take(&c.TelegramUsername, o.TelegramUsername)
	if o.CreatedAt.Before(c.CreatedAt) {
		c.CreatedAt = o.CreatedAt
	}
	c.UpdatedAt = now
}

// Rename sets the display name; it must be 1 to MaxContactNameLength
// characters.
func (c *Contact) Rename(name string, now time.Time) error {
	name = strings.TrimSpace(name)
	if name == "" || len([]rune(name)) > MaxContactNameLength {
		return failure.Invalid(failure.Field("string_too_long", "name must be 1 to 200 characters", "name"))
	}
	c.Name, c.UpdatedAt = name, now
	return nil
}

func (c Contact) clone() Contact {
	c.Phones = slices.Clone(c.Phones)
	return c
}

func (c Contact) equal(o Contact) bool {
	return c.Name == o.Name && slices.Equal(c.Phones, o.Phones) && c.WhatsAppUserID == o.WhatsAppUserID &&
		c.WhatsAppUsername == o.WhatsAppUsername && c.TelegramUserID == o.TelegramUserID && c.TelegramUsername == o.TelegramUsername
}

func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}
