package telegram_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/adapters/channels/telegram"
	"github.com/switchboard-dev/switchboard/adapters/channels/telegram/telegramfake"
	"github.com/switchboard-dev/switchboard/domain/failure"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// FuzzWebhook holds the Telegram webhook to its contract for any body
// with the right secret token. A body that is not an update is refused as
// Invalid; any other update is accounted for (stored or marked, so that it
// is looked at once). A message of a person in a private chat or a group
// that carries content Switchboard reads (text, a file, a place, a
// contact, a sticker) is stored, under its chat and message id, as content
// the domain accepts when the update is within Telegram's own limits;
// content of a type Switchboard does not read (a poll, a dice) is stored
// too, as unsupported.
func FuzzWebhook(f *testing.F) {
	f.Add(telegramfake.PrivateText(1, 10, 987654321, "Alice_B", "Alice", "hello"))
	f.Add(telegramfake.SharedContact(2, 11, 987654321, "Alice", "491701234567"))
	f.Add(telegramfake.GroupText(3, 12, -1001234567890, "Team", 987654321, "Alice", "hi all"))
	const user = `"from":{"id":987654321,"is_bot":false,"first_name":"Alice"},"chat":{"id":987654321,"type":"private"},"date":1763800000`
	for _, m := range []string{
		`"photo":[{"file_id":"AgAC1"},{"file_id":"AgAC2"}],"caption":"look"`,
		`"document":{"file_id":"BQAC","file_name":"a.pdf"}`,
		`"location":{"latitude":52.5,"longitude":13.4}`,
		`"venue":{"location":{"latitude":52.5,"longitude":13.4},"title":"Tor","address":"Pariser Platz"}`,
		`"sticker":{"emoji":""}`, `"text":"   "`, `"poll":{"question":"?"}`, `"dice":{"emoji":"🎲","value":3}`,
		`"video_note":{"file_id":"DQAC"}`, `"new_chat_title":"New"`, `"photo":[]`, `"voice":{"file_id":""}`,
	} {
		f.Add([]byte(`{"update_id":7,"message":{"message_id":20,` + user + `,` + m + `}}`))
	}
	f.Add([]byte(`{"update_id":8,"my_chat_member":{"chat":{"id":-4001,"title":"Team","type":"group"},"new_chat_member":{"status":"left"}}}`))
	f.Add([]byte(`{"update_id":9,"message":{"message_id":13,"chat":{"id":-4001,"type":"group"},"migrate_to_chat_id":-1001234567890}}`))
	f.Add([]byte(`{not json`))
	settings := map[string]string{"bot_token": token}
	secret := telegram.WebhookSecret(number.ID, settings)
	f.Fuzz(func(t *testing.T, body []byte) {
		box := &inbox{seen: map[string]bool{}, settings: settings}
		err := (&telegram.Inbound{Inbox: box}).Webhook(context.Background(), number.ID, secret, body)
		var u telegram.Update
		if json.Unmarshal(body, &u) != nil {
			if fe := failure.As(err); fe == nil || fe.Kind != failure.KindInvalid {
				t.Fatalf("%s: want Invalid, got %v", body, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if !box.seen["tg-update:"+strconv.FormatInt(u.UpdateID, 10)] {
			t.Fatalf("%s: the update was neither stored nor marked", body)
		}
		m := u.Message
		if m == nil || m.MigrateToChatID != 0 || m.From == nil || m.From.IsBot || !(m.Chat.Type == "private" || m.Chat.Type == "group" || m.Chat.Type == "supergroup") || !readable(m) && !unknownContent(body) {
			return
		}
		if len(box.received) != 1 {
			t.Fatalf("%s: the message was not stored", body)
		}
		got := box.received[0]
		if want := telegram.MessageID(number.ID, m.Chat.ID, m.MessageID); got.ProviderMessageID != want || got.Sender.ChatID != strconv.FormatInt(m.From.ID, 10) {
			t.Fatalf("%s: stored as %q from %q", body, got.ProviderMessageID, got.Sender.ChatID)
		}
		if err := got.Content.Check(domain.DefaultFields); err != nil && withinTelegramLimits(m) {
			t.Fatalf("%s: stored as content the domain refuses: %v", body, err)
		}
	})
}

// readable reports whether m carries content Switchboard reads, as the
// Bot API documents the fields.
func readable(m *telegram.Message) bool {
	blank := func(s string) bool { return strings.TrimSpace(s) == "" }
	return !blank(m.Text) || len(m.Photo) > 0 || m.Video != nil || m.Audio != nil || m.Voice != nil || m.Document != nil ||
		m.Location != nil || m.Venue != nil || m.Contact != nil || m.Sticker != nil
}

// unknownContent reports whether the update's message carries content of
// a type the Bot API documents and Switchboard does not read, which must be
// stored as unsupported.
func unknownContent(body []byte) bool {
	var u struct {
		Message map[string]json.RawMessage `json:"message"`
	}
	if json.Unmarshal(body, &u) != nil {
		return false
	}
	for _, f := range []string{"poll", "dice", "video_note", "game", "story", "paid_media", "giveaway", "giveaway_winners", "checklist"} {
		if _, ok := u.Message[f]; ok {
			return true
		}
	}
	return false
}

// withinTelegramLimits reports whether m is a message Telegram could send:
// text of at most 4096 characters, captions of at most 1024, short file
// names and ids, places on the globe.
func withinTelegramLimits(m *telegram.Message) bool {
	runes := func(s string) int { return len([]rune(s)) }
	place := func(l telegram.Location) bool {
		return l.Latitude >= -90 && l.Latitude <= 90 && l.Longitude >= -180 && l.Longitude <= 180
	}
	short := func(f *telegram.File) bool { return f == nil || runes(f.FileID) <= 256 && runes(f.FileName) <= 255 }
	ok := runes(m.Text) <= 4096 && runes(m.Caption) <= 1024 && short(m.Video) && short(m.Audio) && short(m.Voice) && short(m.Document)
	for i := range m.Photo {
		ok = ok && short(&m.Photo[i])
	}
	if m.Location != nil {
		ok = ok && place(*m.Location)
	}
	if m.Venue != nil {
		ok = ok && place(m.Venue.Location) && runes(m.Venue.Title) <= 1024 && runes(m.Venue.Address) <= 1024
	}
	if m.Contact != nil {
		ok = ok && runes(m.Contact.FirstName+m.Contact.LastName+m.Contact.PhoneNumber) <= 512
	}
	return ok
}
