package rest

import (
	"context"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/failure"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// MessagingUseCases is what the REST adapter needs from messaging.
type MessagingUseCases interface {
	SendIndividual(ctx context.Context, in messaging.SendInput) (domain.Message, error)
	SendGroup(ctx context.Context, in messaging.GroupSendInput) (domain.Message, error)
	Receive(ctx context.Context, in messaging.InboundInput) (domain.Message, error)
	CreateGroup(ctx context.Context, in messaging.GroupInput) (domain.Thread, []domain.Participant, error)
	Message(ctx context.Context, accountID, id string) (messaging.MessageDetails, error)
	ThreadDetails(ctx context.Context, accountID, id string) (domain.Thread, []domain.Participant, error)
	Threads(ctx context.Context, q messaging.ThreadQuery) ([]messaging.ThreadSummary, int, error)
	Recent(ctx context.Context, accountID, threadID string) ([]domain.Message, error)
	History(ctx context.Context, q messaging.HistoryQuery) (messaging.MessagePage, error)
	ManageGroup(ctx context.Context, cmd messaging.GroupCommand) (messaging.GroupResult, error)
	MarkRead(ctx context.Context, accountID, threadID string) (messaging.ReadResult, error)
	Typing(ctx context.Context, accountID, threadID string) (messaging.TypingResult, error)
	React(ctx context.Context, in messaging.ReactInput) (domain.Reaction, error)
	ReceiveReaction(ctx context.Context, in messaging.InboundReaction) (domain.Reaction, error)
	ReceiveChange(ctx context.Context, in messaging.InboundChange) (domain.Message, error)
	Media(ctx context.Context, accountID, messageID string) (messaging.MediaStream, domain.Message, error)
	CheckMediaLink(accountID, messageID, expires, signature string) error
	Contacts(ctx context.Context, accountID, search, cursor, field string, limit int) (messaging.ContactPage, error)
	Contact(ctx context.Context, accountID, id string) (messaging.ContactDetails, error)
	RenameContact(ctx context.Context, accountID, id, name string) (messaging.ContactDetails, error)
	MergeContacts(ctx context.Context, accountID, id, other string) (messaging.ContactDetails, error)
	SaveWebUI(ctx context.Context, in messaging.WebUIInput) (domain.Message, error)
	Templates(ctx context.Context, f messaging.TemplateFilter) ([]domain.Template, error)
	SyncTemplates(ctx context.Context, accountID, number string) ([]domain.Template, error)
}

func (s *server) mountMessaging(api *edge.Routes) {
	if s.messaging == nil {
		return
	}
	for _, p := range []string{"/messages/individual/{accountId}/send", "/individual/{accountId}/send"} {
		api.Handle(http.MethodPost, p, s.idempotentAnswering(s.sendIndividual))
	}
	for _, p := range []string{"/messages/group/{accountId}/send", "/group/{accountId}/send"} {
		api.Handle(http.MethodPost, p, s.idempotentAnswering(s.sendGroup))
	}
	api.Handle(http.MethodPost, "/send/{accountId}", s.idempotentAnswering(s.sendUniversal))
	api.Handle(http.MethodGet, "/messages/individual/{accountId}/get-details/{messageId}", s.messageDetails)
	api.Handle(http.MethodGet, "/messages/threads/{accountId}/get-details/{threadId}", s.threadDetails)
	api.Handle(http.MethodGet, "/messages/threads/{accountId}/get-all", s.threadList)
	api.Handle(http.MethodGet, "/messages/threads/{accountId}/get-all/{phone_number}", s.threadList)
	api.Handle(http.MethodGet, "/messages/threads/{accountId}/get-recent/{threadId}", s.recentMessages)
	api.Handle(http.MethodGet, "/messages/threads/{accountId}/get-messages/{threadId}", s.threadMessages)
	api.Handle(http.MethodPost, "/messages/threads/{accountId}/read/{threadId}", s.idempotent(s.markRead))
	api.Handle(http.MethodPost, "/messages/threads/{accountId}/typing/{threadId}", s.idempotent(s.typing))
	for _, p := range []string{"/whatsapp/{accountId}/group-management", "/group-management/{accountId}"} {
		api.Handle(http.MethodPost, p, s.idempotent(s.manageGroup))
	}
	api.Handle(http.MethodPost, "/sandbox/{accountId}/inbound", s.idempotentAnswering(s.sandboxInbound))
	api.Handle(http.MethodPost, "/sandbox/{accountId}/groups", s.idempotentAnswering(s.sandboxGroup))
	api.Handle(http.MethodPut, "/messages/{accountId}/{messageId}/reaction", s.idempotent(s.react))
	api.Handle(http.MethodDelete, "/messages/{accountId}/{messageId}/reaction", s.idempotent(s.react))
	api.Handle(http.MethodPost, "/sandbox/{accountId}/reaction", s.idempotent(s.sandboxReaction))
	api.Handle(http.MethodPost, "/sandbox/{accountId}/button-press", s.idempotentAnswering(s.sandboxButtonPress))
	api.Handle(http.MethodPost, "/sandbox/{accountId}/edit", s.idempotent(s.sandboxChange))
	api.Handle(http.MethodPost, "/sandbox/{accountId}/delete", s.idempotent(s.sandboxChange))
	api.Handle(http.MethodPost, "/messages/{accountId}/save/web-ui", s.saveWebUI)
	s.mountContacts(api)
	s.mountTemplates(api)
}

// sendBody is both body forms of the per-type send paths: text in
// "content" or "message", or message_type "media" with media_url,
// media_type and caption; attachment_uri attaches a file to a text.
type sendBody struct {
	Content       *string `json:"content"`
	Message       *string `json:"message"`
	MessageType   *string `json:"message_type"`
	MediaURL      *string `json:"media_url"`
	MediaType     *string `json:"media_type"`
	Caption       *string `json:"caption"`
	AttachmentURI *string `json:"attachment_uri"`
	From          *string `json:"from"`
	To            *string `json:"to"`
	ThreadID      *string `json:"thread_id"`
	Service       *string `json:"service"`
	SenderName    *string `json:"sender_name"`
	// ReplyTo is a message of the same thread this one answers.
	ReplyTo *string `json:"reply_to"`
	// Buttons are reply buttons offered with a text.
	Buttons []webhook.Button `json:"buttons"`
	// Template makes an individual send a template message, instead of
	// content or media.
	Template *templateBody `json:"template"`
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// mediaKind maps a media_type value to a media kind; anything else maps to
// a kind the content check reports as an unknown media_type.
func mediaKind(v string) domain.Kind {
	if k := domain.Kind(v); k.IsMedia() {
		return k
	}
	return domain.Kind("unknown media type")
}

// content turns the body's content fields into message content, and says
// which fields it came from.
func (b sendBody) content(p *failure.Problems) (domain.Content, domain.Fields) {
	text, fields := b.Content, domain.Fields{Text: "content", MediaURL: "media_url"}
	if text == nil && b.Message != nil {
		text, fields.Text = b.Message, "message"
	}
	mediaGiven := b.MediaURL != nil || b.MediaType != nil || b.Caption != nil
	switch mt := str(b.MessageType); {
	case mt == "media", mt == "" && b.MediaURL != nil && b.AttachmentURI == nil:
		// A media_url without message_type is a media message too: its
		// fields are not silently dropped.
		required(p, b.MediaURL, "media_url")
		kind := mediaKind(str(b.MediaType))
		if b.MediaType == nil {
			if mt == "media" {
				p.Add("missing", "Field required", "media_type")
			}
			kind = kindFromURL(str(b.MediaURL))
		}
		return domain.Content{Kind: kind, MediaURL: str(b.MediaURL), Caption: firstNonEmpty(str(b.Caption), str(text))}, fields
	case mt == "" || mt == "text":
		if b.AttachmentURI != nil {
			if b.MediaURL != nil {
				p.Add("extra_forbidden", "give the file in attachment_uri or media_url, not both", "media_url")
			}
			kind := kindFromURL(*b.AttachmentURI)
			if b.MediaType != nil {
				kind = mediaKind(*b.MediaType)
			}
			fields.MediaURL = "attachment_uri"
			return domain.Content{Kind: kind, MediaURL: *b.AttachmentURI, Caption: firstNonEmpty(str(b.Caption), str(text))}, fields
		}
		if mediaGiven {
			p.Add("extra_forbidden", "media_url, media_type and caption belong to message_type media", firstGiven(b))
		}
		if text == nil {
			p.Add("missing", "Field required", "content")
		}
		return domain.Content{Kind: domain.KindText, Text: str(text)}, fields
	default:
		p.Add("enum", "message_type must be text or media", "message_type")
		return domain.Content{Kind: domain.KindText, Text: "-"}, fields
	}
}

// firstGiven names the first media field present, for an error location.
func firstGiven(b sendBody) string {
	switch {
	case b.MediaURL != nil:
		return "media_url"
	case b.MediaType != nil:
		return "media_type"
	}
	return "caption"
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// kindFromURL guesses an attachment's media kind from its file extension.
func kindFromURL(raw string) domain.Kind {
	u := strings.ToLower(raw)
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	switch path.Ext(u) {
	case ".jpg", ".jpeg", ".png", ".gif", ".webp":
		return domain.KindImage
	case ".mp4", ".3gp", ".mov":
		return domain.KindVideo
	case ".mp3", ".ogg", ".aac", ".m4a", ".amr", ".opus":
		return domain.KindAudio
	}
	return domain.KindDocument
}

// sendRequest decodes a per-type send body: the fields both forms share,
// then the send's own (check); it answers the error itself and returns
// false when the request is refused.
func sendRequest(w http.ResponseWriter, r *http.Request, check func(b sendBody, p *failure.Problems)) (sendBody, domain.Content, domain.Fields, bool) {
	var b sendBody
	if err := decodeJSON(r, &b); err != nil {
		edge.WriteError(w, r, err)
		return b, domain.Content{}, domain.Fields{}, false
	}
	var p failure.Problems
	required(&p, b.From, "from")
	check(b, &p)
	if b.SenderName != nil {
		p.Add("extra_forbidden", "Extra inputs are not permitted", "sender_name")
	}
	if b.Template != nil {
		// A template carries its own text: none of the content fields go
		// with it.
		for _, f := range []struct {
			name  string
			given bool
		}{{"content", b.Content != nil}, {"message", b.Message != nil}, {"message_type", b.MessageType != nil}, {"media_url", b.MediaURL != nil},
			{"media_type", b.MediaType != nil}, {"caption", b.Caption != nil}, {"attachment_uri", b.AttachmentURI != nil}, {"buttons", b.Buttons != nil}} {
			if f.given {
				p.Add("extra_forbidden", "a template message carries its own text: "+f.name+" does not go with template", f.name)
			}
		}
		return b, domain.Content{}, domain.Fields{}, finish(w, r, p)
	}
	content, fields := b.content(&p)
	content.Buttons = webhook.ModelButtons(b.Buttons)
	return b, content, fields, finish(w, r, p)
}

// finish answers the problems of a request, if any, and reports whether
// it may go on.
func finish(w http.ResponseWriter, r *http.Request, p failure.Problems) bool {
	if err := p.Err(); err != nil {
		edge.WriteError(w, r, err)
		return false
	}
	return true
}

func (s *server) sendIndividual(w http.ResponseWriter, r *http.Request, key *edge.Held) {
	b, content, fields, ok := sendRequest(w, r, func(b sendBody, p *failure.Problems) {
		required(p, b.To, "to")
		required(p, b.Service, "service")
		if b.ThreadID != nil {
			p.Add("extra_forbidden", "thread_id is for group sends; an individual send names the user in to", "thread_id")
		}
	})
	if !ok {
		return
	}
	in := messaging.SendInput{
		AccountID: mux.Vars(r)["accountId"], Service: *b.Service, From: *b.From, To: *b.To, Content: content, Fields: fields,
		ReplyTo: str(b.ReplyTo), Idempotency: edge.AnswerWith(key, individualAnswer),
	}
	if b.Template != nil {
		in.Template, in.TemplateField = b.Template.send(), []any{"template"}
	}
	m, err := s.messaging.SendIndividual(r.Context(), in)
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	writeAnswer(w, individualAnswer(m))
}

func (s *server) sendGroup(w http.ResponseWriter, r *http.Request, key *edge.Held) {
	b, content, fields, ok := sendRequest(w, r, func(b sendBody, p *failure.Problems) {
		required(p, b.ThreadID, "thread_id")
		if b.To != nil {
			p.Add("extra_forbidden", "to is for individual sends; a group send names the group in thread_id", "to")
		}
		if b.Template != nil {
			p.Add("extra_forbidden", "templates are sent to users: send one with the individual send", "template")
		}
	})
	if !ok {
		return
	}
	m, err := s.messaging.SendGroup(r.Context(), messaging.GroupSendInput{
		AccountID: mux.Vars(r)["accountId"], Service: str(b.Service), From: *b.From, ThreadID: *b.ThreadID, Content: content, Fields: fields,
		ReplyTo: str(b.ReplyTo), Idempotency: edge.AnswerWith(key, groupAnswer),
	})
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	writeAnswer(w, groupAnswer(m))
}

// universalBody is the universal send: type individual (with to) or group
// (with thread_id), and a content object.
type universalBody struct {
	From     *string           `json:"from"`
	Service  *string           `json:"service"`
	Type     *string           `json:"type"`
	To       *string           `json:"to"`
	ThreadID *string           `json:"thread_id"`
	Content  *universalContent `json:"content"`
	ReplyTo  *string           `json:"reply_to"`
	Buttons  []webhook.Button  `json:"buttons"`
}

type universalContent struct {
	Type      *string  `json:"type"`
	Text      *string  `json:"text"`
	Message   *string  `json:"message"`
	MediaURL  *string  `json:"media_url"`
	MediaType *string  `json:"media_type"`
	Caption   *string  `json:"caption"`
	Latitude  *float64 `json:"latitude"`
	Longitude *float64 `json:"longitude"`
	Name      *string  `json:"name"`
	Address   *string  `json:"address"`
}

// UnmarshalJSON decodes the content object strictly, so that an unknown
// field inside it is reported at ["body", "content", name].
func (c *universalContent) UnmarshalJSON(data []byte) error {
	type plain universalContent
	v, err := decodeNested[plain](data, "content")
	*c = universalContent(v)
	return err
}

func (c universalContent) content(p *failure.Problems) (domain.Content, domain.Fields) {
	fields := domain.Fields{Base: []any{"content"}, Text: "text", MediaURL: "media_url"}
	switch t := str(c.Type); t {
	case "", "text":
		text := c.Text
		if text == nil && c.Message != nil {
			text, fields.Text = c.Message, "message"
		}
		if text == nil {
			p.Add("missing", "Field required", "content", "text")
		}
		return domain.Content{Kind: domain.KindText, Text: str(text)}, fields
	case "media":
		if c.MediaURL == nil {
			p.Add("missing", "Field required", "content", "media_url")
		}
		if c.MediaType == nil {
			p.Add("missing", "Field required", "content", "media_type")
		}
		return domain.Content{Kind: mediaKind(str(c.MediaType)), MediaURL: str(c.MediaURL), Caption: str(c.Caption)}, fields
	case "location":
		if c.Latitude == nil {
			p.Add("missing", "Field required", "content", "latitude")
		}
		if c.Longitude == nil {
			p.Add("missing", "Field required", "content", "longitude")
		}
		var lat, lng float64
		if c.Latitude != nil {
			lat = *c.Latitude
		}
		if c.Longitude != nil {
			lng = *c.Longitude
		}
		return domain.Content{Kind: domain.KindLocation, Latitude: lat, Longitude: lng, PlaceName: str(c.Name), Address: str(c.Address)}, fields
	default:
		p.Add("enum", "content.type must be one of text, media, location", "content", "type")
		return domain.Content{Kind: domain.KindText, Text: "-"}, fields
	}
}

func (s *server) sendUniversal(w http.ResponseWriter, r *http.Request, key *edge.Held) {
	var b universalBody
	if err := decodeJSON(r, &b); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	var p failure.Problems
	required(&p, b.From, "from")
	required(&p, b.Type, "type")
	required(&p, b.Content, "content")
	var (
		content domain.Content
		fields  domain.Fields
	)
	if b.Content != nil {
		content, fields = b.Content.content(&p)
		content.Buttons = webhook.ModelButtons(b.Buttons)
	}
	if b.To != nil && b.ThreadID != nil {
		p.Add("value_error", "give either to (individual) or thread_id (group), not both", "thread_id")
	}
	switch str(b.Type) {
	case "individual":
		required(&p, b.To, "to")
		required(&p, b.Service, "service")
	case "group":
		required(&p, b.ThreadID, "thread_id")
	case "":
	default:
		p.Add("enum", "type must be individual or group", "type")
	}
	if err := p.Err(); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	accountID := mux.Vars(r)["accountId"]
	if *b.Type == "individual" {
		m, err := s.messaging.SendIndividual(r.Context(), messaging.SendInput{
			AccountID: accountID, Service: *b.Service, From: *b.From, To: *b.To, Content: content, Fields: fields,
			ReplyTo: str(b.ReplyTo), Idempotency: edge.AnswerWith(key, individualAnswer),
		})
		if err != nil {
			edge.WriteError(w, r, err)
			return
		}
		writeAnswer(w, individualAnswer(m))
		return
	}
	m, err := s.messaging.SendGroup(r.Context(), messaging.GroupSendInput{
		AccountID: accountID, Service: str(b.Service), From: *b.From, ThreadID: *b.ThreadID, Content: content, Fields: fields,
		ReplyTo: str(b.ReplyTo), Idempotency: edge.AnswerWith(key, groupAnswer),
	})
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	writeAnswer(w, groupAnswer(m))
}

// body is the text a message shows: its text or caption.
func body(m domain.Message) string { return m.Content.Summary() }

// individualAnswer is the answer to a send to a user, as written and as
// recorded for its Idempotency-Key.
func individualAnswer(m domain.Message) idempotency.Response {
	return jsonAnswer(http.StatusOK, individualResult(m))
}

// groupAnswer is the answer to a send to a group, as written and as
// recorded for its Idempotency-Key.
func groupAnswer(m domain.Message) idempotency.Response {
	return jsonAnswer(http.StatusOK, groupResult(m))
}

// individualResult answers a send to a user; the fields are in name order,
// as the response always had them.
func individualResult(m domain.Message) individualSendBody {
	b := body(m)
	return individualSendBody{Body: b, ContactID: m.ContactID, Data: individualSendData{Body: b, From: m.From, Status: string(m.Status), To: m.To},
		DateCreated: timestamp(m.CreatedAt), From: m.From, MessageID: m.ID, Status: string(m.Status), ThreadID: m.ThreadID, To: m.To}
}

type individualSendBody struct {
	Body      string `json:"body"`
	ContactID string `json:"contact_id,omitempty"`
	// Data repeats the fields A1Base's Python SDK reads under "data";
	// it builds its answer type from every key there, so it holds exactly
	// these.
	Data        individualSendData `json:"data"`
	DateCreated string             `json:"date_created"`
	From        string             `json:"from"`
	MessageID   string             `json:"message_id"`
	Status      string             `json:"status"`
	ThreadID    string             `json:"thread_id"`
	To          string             `json:"to"`
}

type individualSendData struct {
	Body   string `json:"body"`
	From   string `json:"from"`
	Status string `json:"status"`
	To     string `json:"to"`
}

// groupResult answers a send to a group, its fields in name order.
func groupResult(m domain.Message) groupSendBody {
	b := body(m)
	return groupSendBody{Body: b, ChatGroupID: m.ThreadID, Data: groupSendData{Body: b, Status: string(m.Status), ThreadID: m.ThreadID},
		DateCreated: timestamp(m.CreatedAt), From: m.From, MessageID: m.ID, Status: string(m.Status), ThreadID: m.ThreadID}
}

type groupSendBody struct {
	Body        string `json:"body"`
	ChatGroupID string `json:"chat_group_id"`
	// Data repeats, for A1Base's Python SDK, exactly the fields it reads
	// under "data".
	Data        groupSendData `json:"data"`
	DateCreated string        `json:"date_created"`
	From        string        `json:"from"`
	MessageID   string        `json:"message_id"`
	Status      string        `json:"status"`
	ThreadID    string        `json:"thread_id"`
}

type groupSendData struct {
	Body     string `json:"body"`
	Status   string `json:"status"`
	ThreadID string `json:"thread_id"`
}

func addresses(parts []domain.Participant) []string {
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = p.Address
	}
	return out
}

func (s *server) messageDetails(w http.ResponseWriter, r *http.Request) {
	vars := mux.Vars(r)
	d, err := s.messaging.Message(r.Context(), vars["accountId"], vars["messageId"])
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	m := d.Message
	data := messageDetailsBody{
		AccountID: m.AccountID, AttachmentURI: m.Content.MediaURL, Body: body(m), ChatID: d.Thread.ID, ChatName: d.Thread.Name,
		DateCreated: timestamp(m.CreatedAt), DateUpdated: timestamp(m.UpdatedAt), Direction: string(m.Direction),
		ErrorCode: m.FailureCode, ErrorMessage: m.FailureText, From: m.From, MessageID: m.ID, MessageType: string(m.Content.Kind),
		Participants: addresses(d.Participants), Service: string(m.Service), Status: string(m.Status), ThreadID: m.ThreadID, To: m.To,
		messageExtras: extrasOf(m),
		Media:         mediaOf(m),
	}
	// Existing clients read the fields at the top level too; status there
	// stays the envelope's.
	top := data
	top.Status = "success"
	edge.WriteJSON(w, http.StatusOK, messageDetailsResponse{messageDetailsBody: top, Data: data})
}

// messageDetailsBody is a message as get-details shows it; its fields are
// in name order, as the response always had them.
type messageDetailsBody struct {
	AccountID     string   `json:"account_id"`
	AttachmentURI string   `json:"attachment_uri"`
	Body          string   `json:"body"`
	ChatID        string   `json:"chat_id"`
	ChatName      string   `json:"chat_name"`
	DateCreated   string   `json:"date_created"`
	DateUpdated   string   `json:"date_updated"`
	Direction     string   `json:"direction"`
	ErrorCode     string   `json:"error_code"`
	ErrorMessage  string   `json:"error_message"`
	From          string   `json:"from"`
	MessageID     string   `json:"message_id"`
	MessageType   string   `json:"message_type"`
	Participants  []string `json:"participants"`
	Service       string   `json:"service"`
	Status        string   `json:"status"`
	ThreadID      string   `json:"thread_id"`
	To            string   `json:"to"`
	messageExtras
	// Media is set on media a user sent.
	Media *mediaBody `json:"media,omitempty"`
}

// messageExtras are what a message quotes, its reactions, and the user's
// edit or deletion of it, shown only when it has them.
type messageExtras struct {
	ReplyToMessageID         string         `json:"reply_to_message_id,omitempty"`
	ReplyToProviderMessageID string         `json:"reply_to_provider_message_id,omitempty"`
	QuotedText               string         `json:"quoted_text,omitempty"`
	Reactions                []reactionBody `json:"reactions,omitempty"`
	// Buttons are the reply buttons the message offers.
	Buttons []webhook.Button `json:"buttons,omitempty"`
	// ButtonID and ButtonTitle name the button a button_reply pressed
	// (on the message reply_to_message_id).
	ButtonID     string `json:"button_id,omitempty"`
	ButtonTitle  string `json:"button_title,omitempty"`
	EditedAt     string `json:"edited_at,omitempty"`
	PreviousText string `json:"previous_text,omitempty"`
	Deleted      bool   `json:"deleted,omitempty"`
	DeletedAt    string `json:"deleted_at,omitempty"`
	// UserID and Username are the WhatsApp business-scoped user id and
	// username of the user who sent an inbound message, where known.
	UserID   string `json:"user_id,omitempty"`
	Username string `json:"username,omitempty"`
	// ContactID is the contact (the person) of the thread's user.
	ContactID string `json:"contact_id,omitempty"`
	// Template is the template a template message sent, with its
	// parameters.
	Template *domain.TemplateSend `json:"template,omitempty"`
}

// reactionBody is a reaction on a message.
type reactionBody struct {
	Emoji       string `json:"emoji"`
	Reactor     string `json:"reactor"`
	ReactorName string `json:"reactor_name,omitempty"`
	IsFromAgent bool   `json:"is_from_agent"`
	Timestamp   string `json:"timestamp"`
}

func extrasOf(m domain.Message) messageExtras {
	x := messageExtras{ReplyToMessageID: m.ReplyTo.MessageID, QuotedText: m.ReplyTo.Text, Buttons: webhook.Buttons(m.Content.Buttons),
		PreviousText: m.PreviousText, Deleted: m.Deleted(),
		UserID: m.UserID, Username: m.Username, ContactID: m.ContactID, Template: m.Content.Template}
	if m.Content.Kind == domain.KindButtonReply {
		x.ButtonID, x.ButtonTitle = m.Content.ButtonID, m.Content.Text
	}
	if m.EditedAt != nil {
		x.EditedAt = timestamp(*m.EditedAt)
	}
	if m.DeletedAt != nil {
		x.DeletedAt = timestamp(*m.DeletedAt)
	}
	if m.ReplyTo.MessageID == "" {
		x.ReplyToProviderMessageID = m.ReplyTo.ProviderMessageID
	}
	for _, r := range m.Reactions {
		x.Reactions = append(x.Reactions, reactionBody{Emoji: r.Emoji, Reactor: r.Reactor, ReactorName: r.ReactorName, IsFromAgent: r.FromAgent, Timestamp: timestamp(r.At)})
	}
	return x
}

// messageDetailsResponse is the message's fields at the top level, with
// the envelope's status, and again under data.
type messageDetailsResponse struct {
	messageDetailsBody
	Data messageDetailsBody `json:"data"`
}

func (s *server) threadDetails(w http.ResponseWriter, r *http.Request) {
	vars := mux.Vars(r)
	t, parts, err := s.messaging.ThreadDetails(r.Context(), vars["accountId"], vars["threadId"])
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	data := map[string]any{"account_id": t.AccountID, "chat_id": t.ID, "chat_name": t.Name, "participants": addresses(parts)}
	answer := map[string]any{
		"status": "success", "data": data,
		"account_id": t.AccountID, "chat_id": t.ID, "chat_name": t.Name, "participants": addresses(parts), "thread_id": t.ID,
		"thread_type": string(t.Type), "service": string(t.Service),
	}
	addWindow(answer, t)
	edge.WriteJSON(w, http.StatusOK, answer)
}

// addWindow shows a thread's customer service window in a thread answer,
// for a thread whose provider has one: when it closes (closed) and
// whether free-form sends are accepted now.
func addWindow(answer map[string]any, t domain.Thread) {
	if !t.HasWindow() {
		return
	}
	answer["window_closes_at"] = timestamp(*t.WindowClosesAt)
	answer["window_open"] = t.WindowOpen(time.Now())
}

// listParams reads limit and offset: limit 1-100 (larger is clamped,
// default 20), offset ≥ 0.
func listParams(r *http.Request) (limit, offset int, err error) {
	var p failure.Problems
	limit, offset = limitParam(r, &p, messaging.DefaultListLimit, messaging.MaxListLimit), 0
	if v := r.URL.Query().Get("offset"); v != "" {
		n, convErr := strconv.Atoi(v)
		switch {
		case convErr != nil:
			p = append(p, failure.FieldError{In: "query", Path: []any{"offset"}, Message: "Input should be a valid integer", Type: "int_parsing"})
		case n < 0:
			p = append(p, failure.FieldError{In: "query", Path: []any{"offset"}, Message: "offset must be at least 0", Type: "greater_than_equal"})
		default:
			offset = n
		}
	}
	return limit, offset, p.Err()
}

// limitParam reads the query parameter limit: at least 1, def when
// absent, larger than maxLimit clamped to it (as decisions.md has list
// limits). Anything else is recorded in p.
func limitParam(r *http.Request, p *failure.Problems, def, maxLimit int) int {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	switch {
	case err != nil:
		*p = append(*p, failure.FieldError{In: "query", Path: []any{"limit"}, Message: "Input should be a valid integer", Type: "int_parsing"})
	case n < 1:
		*p = append(*p, failure.FieldError{In: "query", Path: []any{"limit"}, Message: "limit must be at least 1", Type: "greater_than_equal"})
	default:
		return min(n, maxLimit)
	}
	return def
}

func (s *server) threadList(w http.ResponseWriter, r *http.Request) {
	limit, offset, err := listParams(r)
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	vars := mux.Vars(r)
	phone, byPhone := vars["phone_number"]
	if byPhone {
		phone = strings.TrimSpace(phone)
		if !strings.HasPrefix(phone, "+") && !strings.HasPrefix(phone, "@") && !strings.HasPrefix(phone, "-") {
			phone = "+" + phone // a "+" in a path is often sent as a space or dropped
		}
	}
	list, total, err := s.messaging.Threads(r.Context(), messaging.ThreadQuery{AccountID: vars["accountId"], Phone: phone, Limit: limit, Offset: offset})
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	items := make([]map[string]any, len(list))
	for i, ts := range list {
		t := ts.Thread
		item := map[string]any{
			"thread_id": t.ID, "chat_id": t.ID, "thread_type": string(t.Type), "chat_name": t.Name,
			"participants": addresses(ts.Participants), "service": string(t.Service), "created_at": timestamp(t.CreatedAt),
		}
		addWindow(item, t)
		if lm := ts.LastMessage; lm != nil {
			item["last_message"] = map[string]any{"content": body(*lm), "timestamp": timestamp(lm.CreatedAt), "sender_name": senderName(*lm)}
		}
		items[i] = item
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{
		"status": "success", "data": items, "threads": items, "total_count": total, "has_more": offset+len(items) < total,
	})
}

func senderName(m domain.Message) string {
	if m.SenderName != "" {
		return m.SenderName
	}
	return m.From
}

func (s *server) recentMessages(w http.ResponseWriter, r *http.Request) {
	vars := mux.Vars(r)
	msgs, err := s.messaging.Recent(r.Context(), vars["accountId"], vars["threadId"])
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	items := threadMessageItems(msgs)
	edge.WriteJSON(w, http.StatusOK, recentMessagesResponse{AccountID: vars["accountId"], Data: items, Messages: items, Status: "success", ThreadID: vars["threadId"]})
}

// threadMessageItems lists messages as get-recent and get-messages show
// them.
func threadMessageItems(msgs []domain.Message) []threadMessageBody {
	items := make([]threadMessageBody, len(msgs))
	for i, m := range msgs {
		created := timestamp(m.CreatedAt)
		items[i] = threadMessageBody{
			AttachmentURI: m.Content.MediaURL, Body: body(m), Content: body(m), DateSent: created, Direction: string(m.Direction),
			From: m.From, MessageID: m.ID, MessageType: string(m.Content.Kind), SenderName: senderName(m), SenderNumber: m.From,
			Service: string(m.Service), Status: string(m.Status), ThreadID: m.ThreadID, Timestamp: created, To: m.To,
			messageExtras: extrasOf(m),
			Media:         mediaOf(m),
		}
	}
	return items
}

// threadMessageBody is a message as get-recent and get-messages list it;
// its fields are in name order, as the response always had them.
type threadMessageBody struct {
	AttachmentURI string `json:"attachment_uri"`
	Body          string `json:"body"`
	Content       string `json:"content"`
	DateSent      string `json:"date_sent"`
	Direction     string `json:"direction"`
	From          string `json:"from"`
	MessageID     string `json:"message_id"`
	MessageType   string `json:"message_type"`
	SenderName    string `json:"sender_name"`
	SenderNumber  string `json:"sender_number"`
	Service       string `json:"service"`
	Status        string `json:"status"`
	ThreadID      string `json:"thread_id"`
	Timestamp     string `json:"timestamp"`
	To            string `json:"to"`
	messageExtras
	// Media is set on media a user sent.
	Media *mediaBody `json:"media,omitempty"`
}

// recentMessagesResponse lists the messages under data and, for existing
// clients, again under messages.
type recentMessagesResponse struct {
	AccountID string              `json:"account_id"`
	Data      []threadMessageBody `json:"data"`
	Messages  []threadMessageBody `json:"messages"`
	Status    string              `json:"status"`
	ThreadID  string              `json:"thread_id"`
}

// nextCursorHeader carries the next page's cursor of a transcript, whose
// body is plain text.
const nextCursorHeader = "X-Next-Cursor"

// threadMessages answers one page of a thread's history: JSON, or with
// format=transcript plain text, one line per message, oldest first.
func (s *server) threadMessages(w http.ResponseWriter, r *http.Request) {
	var p failure.Problems
	limit := limitParam(r, &p, messaging.DefaultPageSize, messaging.MaxPageSize)
	format := r.URL.Query().Get("format")
	if format != "" && format != "json" && format != "transcript" {
		p = append(p, failure.FieldError{In: "query", Path: []any{"format"}, Message: "format must be json or transcript", Type: "enum"})
	}
	if err := p.Err(); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	vars := mux.Vars(r)
	page, err := s.messaging.History(r.Context(), messaging.HistoryQuery{
		AccountID: vars["accountId"], ThreadID: vars["threadId"], Limit: limit, Before: r.URL.Query().Get("before"),
	})
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	next := page.NextCursor()
	if format == "transcript" {
		if next != "" {
			w.Header().Set(nextCursorHeader, next)
		}
		edge.WriteText(w, http.StatusOK, domain.Transcript(page.Messages))
		return
	}
	body := threadMessagesResponse{Data: threadMessageItems(page.Messages), Status: "success"}
	if next != "" {
		body.NextCursor = &next
	}
	edge.WriteJSON(w, http.StatusOK, body)
}

// threadMessagesResponse is a page of a thread's history; next_cursor is
// null on the last page.
type threadMessagesResponse struct {
	Data       []threadMessageBody `json:"data"`
	NextCursor *string             `json:"next_cursor"`
	Status     string              `json:"status"`
}

func (s *server) sandboxInbound(w http.ResponseWriter, r *http.Request, key *edge.Held) {
	var b sendBody
	if err := decodeJSON(r, &b); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	var p failure.Problems
	required(&p, b.Service, "service")
	required(&p, b.From, "from")
	required(&p, b.To, "to")
	content, fields := b.content(&p)
	if b.Buttons != nil {
		p.Add("extra_forbidden", "a user sends no buttons: simulate a press with the button-press route", "buttons")
	}
	if content.Kind.IsMedia() && content.MediaURL != "" {
		// The simulated user's file stays at its URL, as a provider keeps
		// a user's file: the agent opens it through its media link.
		if err := domain.CheckMediaURL(content.MediaURL); err != nil {
			p.Add("url_parsing", err.Error(), fields.URLField()...)
		}
		content.MediaRef, content.MediaURL = content.MediaURL, ""
	}
	if err := p.Err(); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	principal, _ := accounts.PrincipalFrom(r.Context())
	m, err := s.messaging.Receive(r.Context(), messaging.InboundInput{
		AccountID: principal.AccountID, Service: *b.Service, From: *b.From, To: *b.To, SenderName: str(b.SenderName),
		ThreadID: str(b.ThreadID), Content: content, Fields: fields, Provider: "sandbox",
		ReplyTo: domain.Reply{MessageID: str(b.ReplyTo)}, Idempotency: edge.AnswerWith(key, sandboxInboundAnswer),
	})
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	writeAnswer(w, sandboxInboundAnswer(m))
}

// sandboxInboundAnswer is the answer to a sandbox inbound message, as
// written and as recorded for its Idempotency-Key.
func sandboxInboundAnswer(m domain.Message) idempotency.Response {
	return jsonAnswer(http.StatusOK, map[string]any{"status": "success", "message_id": m.ID, "thread_id": m.ThreadID, "date_created": timestamp(m.CreatedAt)})
}

type sandboxGroupBody struct {
	Service      *string  `json:"service"`
	AgentNumber  *string  `json:"agent_number"`
	Title        *string  `json:"title"`
	Participants []string `json:"participants"`
}

func (s *server) sandboxGroup(w http.ResponseWriter, r *http.Request, key *edge.Held) {
	var b sandboxGroupBody
	if err := decodeJSON(r, &b); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	var p failure.Problems
	required(&p, b.Service, "service")
	required(&p, b.AgentNumber, "agent_number")
	required(&p, b.Title, "title")
	if b.Participants == nil {
		p.Add("missing", "Field required", "participants")
	}
	if err := p.Err(); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	t, parts, err := s.messaging.CreateGroup(r.Context(), messaging.GroupInput{
		AccountID: mux.Vars(r)["accountId"], Service: *b.Service, AgentNumber: *b.AgentNumber, Title: *b.Title, Participants: b.Participants,
		Idempotency: edge.AnswerWith(key, sandboxGroupAnswer),
	})
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	writeAnswer(w, sandboxGroupAnswer(domain.GroupState{Thread: t, Members: parts}))
}

// sandboxGroupAnswer is the answer to a simulated group, as written and
// as recorded for its Idempotency-Key.
func sandboxGroupAnswer(g domain.GroupState) idempotency.Response {
	return jsonAnswer(http.StatusCreated, map[string]any{"status": "success",
		"data": map[string]any{"thread_id": g.Thread.ID, "title": g.Thread.Name, "participants": addresses(g.Members)}})
}

// reactionRequest is the body of a reaction: the emoji to set (PUT); a
// DELETE takes no body.
type reactionRequest struct {
	Emoji *string `json:"emoji"`
}

// react sets (PUT) or takes back (DELETE) the agent's reaction on a
// message of the account.
func (s *server) react(w http.ResponseWriter, r *http.Request) {
	in := messaging.ReactInput{AccountID: mux.Vars(r)["accountId"], MessageID: mux.Vars(r)["messageId"]}
	if r.Method == http.MethodDelete {
		if err := emptyBody(r); err != nil {
			edge.WriteError(w, r, err)
			return
		}
		in.Remove = true
	} else {
		var b reactionRequest
		if err := decodeJSON(r, &b); err != nil {
			edge.WriteError(w, r, err)
			return
		}
		var p failure.Problems
		required(&p, b.Emoji, "emoji")
		if err := p.Err(); err != nil {
			edge.WriteError(w, r, err)
			return
		}
		in.Emoji = *b.Emoji
	}
	reaction, err := s.messaging.React(r.Context(), in)
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"status": "success", "data": reactionAnswer(reaction)})
}

// reactionAnswer is a reaction as the reaction routes answer it.
func reactionAnswer(r domain.Reaction) map[string]any {
	return map[string]any{"message_id": r.MessageID, "thread_id": r.ThreadID, "emoji": r.Emoji, "removed": r.Removed(),
		"reactor": r.Reactor, "is_from_agent": r.FromAgent}
}

// sandboxReactionBody is a simulated user's reaction: message_id names
// the message reacted to, emoji "" takes the reaction back.
type sandboxReactionBody struct {
	sandboxOnMessage
	Emoji *string `json:"emoji"`
}

// sandboxOnMessage is what the sandbox's simulations of a user acting on
// a message share: the user from (sender_name), the sandbox agent number
// to, the group thread_id when in a group, and the message message_id.
type sandboxOnMessage struct {
	Service    *string `json:"service"`
	From       *string `json:"from"`
	To         *string `json:"to"`
	ThreadID   *string `json:"thread_id"`
	SenderName *string `json:"sender_name"`
	MessageID  *string `json:"message_id"`
}

// decodeOnMessage decodes body, a simulation of a user acting on a
// message: its shared fields (shared, inside body) and its own field
// (value, named field) are required. It answers the error itself and
// returns false when the request is refused.
func decodeOnMessage(w http.ResponseWriter, r *http.Request, body any, shared *sandboxOnMessage, field string, value **string) bool {
	if err := decodeJSON(r, body); err != nil {
		edge.WriteError(w, r, err)
		return false
	}
	var p failure.Problems
	required(&p, shared.Service, "service")
	required(&p, shared.From, "from")
	required(&p, shared.To, "to")
	required(&p, shared.MessageID, "message_id")
	required(&p, *value, field)
	if err := p.Err(); err != nil {
		edge.WriteError(w, r, err)
		return false
	}
	return true
}

// sandboxReaction simulates a user reacting to a message of a sandbox
// number's thread.
func (s *server) sandboxReaction(w http.ResponseWriter, r *http.Request) {
	var b sandboxReactionBody
	if !decodeOnMessage(w, r, &b, &b.sandboxOnMessage, "emoji", &b.Emoji) {
		return
	}
	principal, _ := accounts.PrincipalFrom(r.Context())
	reaction, err := s.messaging.ReceiveReaction(r.Context(), messaging.InboundReaction{
		AccountID: principal.AccountID, Service: *b.Service, From: *b.From, To: *b.To, ThreadID: str(b.ThreadID),
		SenderName: str(b.SenderName), TargetMessageID: *b.MessageID, Emoji: *b.Emoji, Provider: "sandbox",
	})
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"status": "success", "data": reactionAnswer(reaction)})
}

// sandboxButtonPressBody is a simulated press of a reply button: the user
// from presses button_id on the agent's message message_id.
type sandboxButtonPressBody struct {
	sandboxOnMessage
	ButtonID *string `json:"button_id"`
}

// sandboxButtonPress simulates a user's press of a reply button of the
// agent's message: a button_reply message on it, as a provider reports.
func (s *server) sandboxButtonPress(w http.ResponseWriter, r *http.Request, key *edge.Held) {
	var b sandboxButtonPressBody
	if !decodeOnMessage(w, r, &b, &b.sandboxOnMessage, "button_id", &b.ButtonID) {
		return
	}
	principal, _ := accounts.PrincipalFrom(r.Context())
	m, err := s.messaging.Receive(r.Context(), messaging.InboundInput{
		AccountID: principal.AccountID, Service: *b.Service, From: *b.From, To: *b.To, SenderName: str(b.SenderName),
		ThreadID: str(b.ThreadID), Content: domain.Content{Kind: domain.KindButtonReply, ButtonID: *b.ButtonID}, Provider: "sandbox",
		ReplyTo: domain.Reply{MessageID: *b.MessageID}, Idempotency: edge.AnswerWith(key, sandboxInboundAnswer),
	})
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	writeAnswer(w, sandboxInboundAnswer(m))
}

// sandboxChangeBody is a simulated user's edit (text, the new text) or
// deletion of a message they sent: message_id names it.
type sandboxChangeBody struct {
	Service    *string `json:"service"`
	From       *string `json:"from"`
	To         *string `json:"to"`
	ThreadID   *string `json:"thread_id"`
	SenderName *string `json:"sender_name"`
	MessageID  *string `json:"message_id"`
	Text       *string `json:"text"`
}

// sandboxChange simulates a user editing (POST …/edit) or deleting for
// everyone (POST …/delete) a message they sent to a sandbox number.
func (s *server) sandboxChange(w http.ResponseWriter, r *http.Request) {
	var b sandboxChangeBody
	if err := decodeJSON(r, &b); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	deleted := strings.HasSuffix(r.URL.Path, "/delete")
	var p failure.Problems
	required(&p, b.Service, "service")
	required(&p, b.From, "from")
	required(&p, b.To, "to")
	required(&p, b.MessageID, "message_id")
	if !deleted {
		required(&p, b.Text, "text")
	}
	if err := p.Err(); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	principal, _ := accounts.PrincipalFrom(r.Context())
	m, err := s.messaging.ReceiveChange(r.Context(), messaging.InboundChange{
		AccountID: principal.AccountID, Service: *b.Service, From: *b.From, To: *b.To, ThreadID: str(b.ThreadID),
		SenderName: str(b.SenderName), TargetMessageID: *b.MessageID, Deleted: deleted,
		Content: domain.Content{Kind: domain.KindText, Text: str(b.Text)}, Provider: "sandbox",
	})
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"status": "success", "data": threadMessageItems([]domain.Message{m})[0]})
}
