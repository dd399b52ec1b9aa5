package whatsapp_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp"
	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp/whatsappfake"
	"github.com/switchboard-dev/switchboard/domain/failure"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// FuzzWebhook holds the Cloud API webhook to its contract for any signed
// body. A body that is not a payload is refused as Invalid; otherwise
// every message of the number that has a sender and an id is handed to
// the inbox once, as a message of a known kind or an unsupported one, and
// media point at the Graph API object the payload names.
func FuzzWebhook(f *testing.F) {
	f.Add(whatsappfake.TextMessage(pnid, display, "14155550111", "Sheena Nelson", "wamid.t1", "Does it come in another color?"))
	f.Add(whatsappfake.ImageMessage(pnid, display, "14155550111", "Sheena Nelson", "wamid.i1", "1003383421387256", "look"))
	f.Add(whatsappfake.Status(pnid, display, "wamid.out2", "14155550111", "failed", 131047))
	for _, m := range []string{
		`{"from":"14155550111","id":"wamid.u1","type":"unsupported","errors":[{"code":131051}]}`,
		`{"from":"14155550111","id":"wamid.o1","type":"order","order":{"catalog_id":"1"}}`,
		`{"from":"14155550111","id":"wamid.c1","type":"contacts","contacts":[{"name":{"formatted_name":"A"}}]}`,
		`{"from":"14155550111","id":"wamid.e1","type":"text","text":{"body":"   "}}`,
		`{"from":"14155550111","id":"wamid.r1","type":"reaction","reaction":{"message_id":"wamid.x","emoji":""}}`,
		`{"from":"14155550111","id":"wamid.d1","type":"document","document":{"id":"../../me?fields=id"}}`,
		`{"from":"14155550111","id":"wamid.l1","type":"location","location":{"latitude":52.5,"longitude":13.4}}`,
		`{"from":"14155550111","id":"wamid.b1","type":"button","button":{"text":"Yes"}}`,
		`{"from":"14155550111","id":"wamid.s1","type":"sticker","sticker":{"id":""}}`,
		`{"from":"14155550111","id":"wamid.i2","type":"interactive","interactive":{"type":"nfm_reply"}}`,
	} {
		f.Add([]byte(`{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"messages","value":{"messaging_product":"whatsapp","metadata":{"phone_number_id":"` + pnid + `"},"messages":[` + m + `]}}]}]}`))
	}
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, body []byte) {
		box := newInbox()
		in := &whatsapp.Inbound{Inbox: box}
		err := in.Webhook(context.Background(), number.ID, whatsappfake.Sign(body, appSecret), body)
		if err != nil {
			if fe := failure.As(err); fe == nil || fe.Kind != failure.KindInvalid || len(fe.Fields) != 1 || fe.Fields[0].Type != "json_invalid" {
				t.Fatalf("%s: want Invalid json_invalid, got %v", body, err)
			}
			return
		}
		want := messagesOf(body)
		got := map[string]bool{}
		for _, m := range box.messages {
			got[m.ProviderMessageID] = true
			c := m.Content
			switch {
			case m.Reaction != nil && c.Kind == "":
			case c.Kind == domain.KindText, c.Kind == domain.KindLocation:
			case c.Kind.IsMedia():
				if c.MediaURL != "" || c.MediaRef == "" || c.MediaRef == "." || c.MediaRef == ".." || c.Check(domain.Fields{}) != nil {
					t.Fatalf("%s: the media %+v is not a media id kept by the provider", body, c)
				}
			default:
				t.Fatalf("%s: a message of kind %q", body, c.Kind)
			}
		}
		for id := range want {
			if !got[id] {
				t.Fatalf("%s: the message %q was dropped", body, id)
			}
		}
	})
}

// messagesOf reads the ids of the messages of the number in a payload, with
// a sender, as a generic JSON reader sees them.
func messagesOf(body []byte) map[string]bool {
	var p struct {
		Entry []struct {
			Changes []struct {
				Field string `json:"field"`
				Value struct {
					Metadata struct {
						PhoneNumberID string `json:"phone_number_id"`
					} `json:"metadata"`
					Messages []struct {
						From string `json:"from"`
						ID   string `json:"id"`
					} `json:"messages"`
				} `json:"value"`
			} `json:"changes"`
		} `json:"entry"`
	}
	out := map[string]bool{}
	if json.Unmarshal(body, &p) != nil {
		return out
	}
	for _, e := range p.Entry {
		for _, ch := range e.Changes {
			if ch.Field != "messages" || ch.Value.Metadata.PhoneNumberID != pnid {
				continue
			}
			for _, m := range ch.Value.Messages {
				if m.From != "" && m.ID != "" {
					out[m.ID] = true
				}
			}
		}
	}
	return out
}
