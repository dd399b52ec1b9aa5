// Package whatsappfake is a WhatsApp Cloud API (Graph API) server for
// tests, on 127.0.0.1: it answers sends and the phone number lookup with
// the request and response JSON of the Cloud API reference, errors
// included, records every send, serves the media a test gives it (the
// media object lookup and the download URL it names), and builds signed
// webhook payloads.
package whatsappfake

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// Version is the Graph API version the fake serves.
const Version = "v23.0"

// Server is the fake Cloud API for one business phone number.
type Server struct {
	URL           string
	PhoneNumberID string
	Token         string
	Display       string

	mu       sync.Mutex
	sends    []map[string]any
	statuses []map[string]any
	nextID   int
	// failures maps a recipient (digits), or the message id of a read
	// status, to a Graph error code.
	failures map[string]int
	// media are the files users sent, by media id.
	media map[string]MediaFile
	// templates are the business account's message templates; listings
	// the queries of their listing; PageSize bounds a listing's page.
	templates []Template
	listings  []url.Values
	PageSize  int
	// groupBook is the Groups API's state (groups.go).
	groupBook *groupBook
	// profile is the business profile and its uploads (profile.go).
	profile profileState
}

// MediaFile is a file the fake keeps for a media id. Open returns its
// bytes from the start on every download, so that a large file need not
// be held; Size is what the media object and the download declare (0
// declares nothing: the download is chunked).
type MediaFile struct {
	MimeType string
	Size     int64
	SHA256   string
	Open     func() io.Reader
}

// New starts a fake for the phone number id, access token and display
// number ("+1 555-010-0100").
func New(t testing.TB, phoneNumberID, token, display string) *Server {
	s := &Server{PhoneNumberID: phoneNumberID, Token: token, Display: display, failures: map[string]int{}, media: map[string]MediaFile{}}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Settings are a number's provider settings pointing at this fake.
func (s *Server) Settings(appSecret, verifyToken string) map[string]string {
	return map[string]string{
		"phone_number_id": s.PhoneNumberID, "access_token": s.Token, "app_secret": appSecret,
		"verify_token": verifyToken, "api_base_url": s.URL, "graph_version": Version, "waba_id": WABAID, "app_id": AppID,
	}
}

// Fail makes sends to recipient (digits, no +), or read statuses of the
// message id recipient, answer the error code.
func (s *Server) Fail(recipient string, code int) {
	s.mu.Lock()
	s.failures[recipient] = code
	s.mu.Unlock()
}

// AddMedia keeps data under the media id, as a file a user sent.
func (s *Server) AddMedia(mediaID, mimeType string, data []byte) {
	sum := sha256.Sum256(data)
	s.AddMediaFile(mediaID, MediaFile{MimeType: mimeType, Size: int64(len(data)), SHA256: base64.StdEncoding.EncodeToString(sum[:]),
		Open: func() io.Reader { return bytes.NewReader(data) }})
}

// AddMediaFile keeps f under the media id.
func (s *Server) AddMediaFile(mediaID string, f MediaFile) {
	s.mu.Lock()
	s.media[mediaID] = f
	s.mu.Unlock()
}

// downloadPath is where the fake serves media bytes, as the Cloud API's
// lookaside URLs (https://lookaside.fbsbx.com/whatsapp_business/attachments/?mid=…).
const downloadPath = "/whatsapp_business/attachments/"

// mediaObject answers GET /{version}/{media-id}: the media object with
// its download URL, or the Graph API's error for an id it does not know.
func (s *Server) mediaObject(w http.ResponseWriter, id string) {
	s.mu.Lock()
	f, ok := s.media[id]
	s.mu.Unlock()
	if !ok {
		unknownObject(w, id)
		return
	}
	obj := map[string]any{
		"messaging_product": "whatsapp", "id": id, "mime_type": f.MimeType, "sha256": f.SHA256,
		"url": s.URL + downloadPath + "?" + url.Values{"mid": {id}, "ext": {"1763800000"}, "hash": {"ATuQkmO3n0eRNvZ5_fake"}}.Encode(),
	}
	if f.Size > 0 {
		obj["file_size"] = f.Size
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(obj)
}

// download streams the bytes of the media id named in the query.
func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("mid")
	s.mu.Lock()
	f, ok := s.media[id]
	s.mu.Unlock()
	if !ok {
		unknownObject(w, id)
		return
	}
	w.Header().Set("Content-Type", f.MimeType)
	if f.Size > 0 {
		w.Header().Set("Content-Length", strconv.FormatInt(f.Size, 10))
	}
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, f.Open())
}

// unknownObject is the Graph API's answer for an object id it does not
// have: error 100, subcode 33.
func unknownObject(w http.ResponseWriter, id string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": fmt.Sprintf("Unsupported get request. Object with ID '%s' does not exist, cannot be loaded due to missing permissions, or does not support this operation.", id),
		"type":    "GraphMethodException", "code": 100, "error_subcode": 33, "fbtrace_id": "AbCdEfGhIjKlMnOpQrStUv",
	}})
}

// Sends returns the recorded send bodies.
func (s *Server) Sends() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.sends...)
}

// Statuses returns the recorded read status bodies (read receipts and
// typing indicators), as they were posted.
func (s *Server) Statuses() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.statuses...)
}

// graphErrors are error bodies as the Cloud API answers them.
var graphErrors = map[int]struct {
	status  int
	message string
	details string
}{
	190:    {401, "Error validating access token: Session has expired on Tuesday, 18-Nov-25 10:00:00 PST.", ""},
	131030: {400, "(#131030) Recipient phone number not in allowed list", "Recipient phone number not in allowed list: Add recipient phone number to recipient list and try again."},
	131047: {400, "(#131047) Re-engagement message", "Message failed to send because more than 24 hours have passed since the customer last replied to this number."},
	130429: {429, "(#130429) Rate limit hit", "Cloud API message throughput has been reached."},
	131000: {500, "(#131000) Something went wrong", "Message failed to send due to an unknown error."},
	100:    {400, "(#100) Invalid parameter", "Parameter value is not valid"},
	132000: {400, "(#132000) Number of parameters does not match the expected number of params", "The number of parameters given does not match the number of variables of the template."},
	132001: {404, "(#132001) Template name does not exist in the translation", "The template does not exist in the language given, or is not approved."},
	10:     {403, "(#10) Application does not have permission for this action", "The Groups API is available to Official Business Accounts only."},
}

func graphError(w http.ResponseWriter, code int) {
	e := graphErrors[code]
	body := map[string]any{"error": map[string]any{
		"message": e.message, "type": "OAuthException", "code": code,
		"fbtrace_id": "AbCdEfGhIjKlMnOpQrStUv",
	}}
	if e.details != "" {
		body["error"].(map[string]any)["error_data"] = map[string]any{"messaging_product": "whatsapp", "details": e.details}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(body)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if s.serveProfile(w, r) {
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+s.Token {
		graphError(w, 190)
		return
	}
	if s.serveGroups(w, r) {
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/"+Version+"/"+s.PhoneNumberID:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"verified_name": "Switchboard Test", "display_phone_number": s.Display,
			"id": s.PhoneNumberID, "quality_rating": "GREEN",
		})
	case r.Method == http.MethodPost && r.URL.Path == "/"+Version+"/"+s.PhoneNumberID+"/messages":
		var body map[string]any
		raw, _ := io.ReadAll(r.Body)
		parsed := json.Unmarshal(raw, &body) == nil
		if parsed && body["status"] != nil {
			s.readStatus(w, body)
			return
		}
		if !parsed || body["messaging_product"] != "whatsapp" || !validAddress(body) || body[fmt.Sprint(body["type"])] == nil ||
			!validReaction(body) || !validContext(body) || !validInteractive(body) || !s.validGroupSend(body) {
			graphError(w, 100)
			return
		}
		if !s.validTemplateMessage(w, body) {
			return
		}
		to := fmt.Sprint(body["to"])
		if body["to"] == nil {
			to = fmt.Sprint(body["recipient"])
		}
		s.mu.Lock()
		s.nextID++
		id := fmt.Sprintf("wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBI%06d", s.nextID)
		s.mu.Unlock()
		if s.refused(w, to, &s.sends, body) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"messaging_product": "whatsapp",
			"contacts":          []any{sentTo(body, to)},
			"messages":          []any{map[string]any{"id": id}},
		})
	case r.Method == http.MethodGet && r.URL.Path == "/"+Version+"/"+WABAID+"/message_templates":
		s.listTemplates(w, r)
	case r.Method == http.MethodGet && r.URL.Path == downloadPath:
		s.download(w, r)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/"+Version+"/") && !strings.Contains(r.URL.Path[len(Version)+2:], "/"):
		s.mediaObject(w, r.URL.Path[len(Version)+2:])
	default:
		graphError(w, 100)
	}
}

// sentTo is the contacts entry of a send's answer: the input and the
// user's phone number, or their user id for a send to a recipient.
func sentTo(body map[string]any, to string) map[string]any {
	if body["recipient_type"] == "group" {
		return map[string]any{"input": to}
	}
	if body["to"] == nil {
		return map[string]any{"input": to, "user_id": to}
	}
	return map[string]any{"input": to, "wa_id": to}
}

// userID is a business-scoped user id, as the Cloud API documents it.
var userID = regexp.MustCompile(`^[A-Z]{2}\.(ENT\.)?[A-Za-z0-9]{1,128}$`)

// validAddress checks who a send goes to, as the Cloud API reads it:
// "to", a phone number (digits), or "recipient", a business-scoped user
// id; one of them, as a string.
func validAddress(body map[string]any) bool {
	to, hasTo := body["to"].(string)
	recipient, hasRecipient := body["recipient"].(string)
	switch {
	case body["to"] != nil && !hasTo, body["recipient"] != nil && !hasRecipient:
		return false
	case hasTo:
		return to != "" && !strings.HasPrefix(to, "+")
	case hasRecipient:
		return userID.MatchString(recipient)
	}
	return false
}

// readStatus answers a status update of an inbound message, as the Cloud
// API does: exactly messaging_product "whatsapp", status "read", the
// message_id of a received message, and optionally typing_indicator
// {"type": "text"}; it answers {"success": true}, and (#100) Invalid
// parameter for any other shape.
func (s *Server) readStatus(w http.ResponseWriter, body map[string]any) {
	id, _ := body["message_id"].(string)
	valid := body["messaging_product"] == "whatsapp" && body["status"] == "read" && strings.HasPrefix(id, "wamid.")
	for k, v := range body {
		switch k {
		case "messaging_product", "status", "message_id":
		case "typing_indicator":
			ti, ok := v.(map[string]any)
			valid = valid && ok && len(ti) == 1 && ti["type"] == "text"
		default:
			valid = false
		}
	}
	if !valid {
		graphError(w, 100)
		return
	}
	if s.refused(w, id, &s.statuses, body) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"success": true})
}

// refused answers the Graph error Fail set for key and returns true;
// otherwise it records body in list and returns false.
func (s *Server) refused(w http.ResponseWriter, key string, list *[]map[string]any, body map[string]any) bool {
	s.mu.Lock()
	code, failing := s.failures[key]
	if !failing {
		*list = append(*list, body)
	}
	s.mu.Unlock()
	if failing {
		graphError(w, code)
	}
	return failing
}

// validReaction checks a reaction message as the Cloud API does: a
// reaction object with exactly a wamid message_id and an emoji (empty
// takes the reaction back), recipient_type individual.
func validReaction(body map[string]any) bool {
	if body["type"] != "reaction" {
		return body["reaction"] == nil
	}
	r, ok := body["reaction"].(map[string]any)
	if !ok || len(r) != 2 || body["recipient_type"] != "individual" {
		return false
	}
	id, _ := r["message_id"].(string)
	emoji, isString := r["emoji"].(string)
	return strings.HasPrefix(id, "wamid.") && isString && len(emoji) <= 32
}

// validContext checks a reply's context: exactly a wamid message_id.
func validContext(body map[string]any) bool {
	c, present := body["context"]
	if !present {
		return true
	}
	m, ok := c.(map[string]any)
	id, _ := m["message_id"].(string)
	return ok && len(m) == 1 && strings.HasPrefix(id, "wamid.") && body["type"] != "reaction"
}

// validInteractive checks an interactive message as the Cloud API checks
// reply buttons: exactly type "button", a body with text of 1 to 1024
// characters and an action of 1 to 3 buttons, each of type "reply" with a
// reply of a unique id (1 to 256 characters) and a title (1 to 20
// characters). Other interactive types (lists, products) are not served.
func validInteractive(body map[string]any) bool {
	if body["type"] != "interactive" {
		return body["interactive"] == nil
	}
	in, ok := body["interactive"].(map[string]any)
	if !ok || len(in) != 3 || in["type"] != "button" {
		return false
	}
	b, _ := in["body"].(map[string]any)
	text, _ := b["text"].(string)
	action, _ := in["action"].(map[string]any)
	buttons, _ := action["buttons"].([]any)
	if len(b) != 1 || text == "" || utf8.RuneCountInString(text) > 1024 || len(action) != 1 || len(buttons) < 1 || len(buttons) > 3 {
		return false
	}
	ids := map[string]bool{}
	for _, raw := range buttons {
		button, _ := raw.(map[string]any)
		reply, _ := button["reply"].(map[string]any)
		id, _ := reply["id"].(string)
		title, _ := reply["title"].(string)
		if len(button) != 2 || button["type"] != "reply" || len(reply) != 2 || id == "" || len(id) > 256 || ids[id] ||
			title == "" || uniseg.GraphemeClusterCount(title) > 20 {
			return false
		}
		ids[id] = true
	}
	return true
}

// Interactive returns the recorded interactive messages (a subset of
// Sends).
func (s *Server) Interactive() []map[string]any {
	var out []map[string]any
	for _, b := range s.Sends() {
		if b["type"] == "interactive" {
			out = append(out, b)
		}
	}
	return out
}

// Reactions returns the recorded reaction messages (a subset of Sends).
func (s *Server) Reactions() []map[string]any {
	var out []map[string]any
	for _, b := range s.Sends() {
		if b["type"] == "reaction" {
			out = append(out, b)
		}
	}
	return out
}

// LastID is the wamid of the last accepted send.
func (s *Server) LastID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBI%06d", s.nextID)
}

// notification wraps a change value of the messages field the way the
// Cloud API posts it.
func notification(phoneNumberID, display string, value map[string]any) []byte {
	return change(phoneNumberID, display, "messages", value)
}

// change wraps a change value of the webhook field the way the Cloud API
// posts it.
func change(phoneNumberID, display, field string, value map[string]any) []byte {
	value["messaging_product"] = "whatsapp"
	value["metadata"] = map[string]any{"display_phone_number": display, "phone_number_id": phoneNumberID}
	b, err := json.Marshal(map[string]any{
		"object": "whatsapp_business_account",
		"entry": []any{map[string]any{
			"id":      "102290129340398",
			"changes": []any{map[string]any{"value": value, "field": field}},
		}},
	})
	if err != nil {
		panic(err)
	}
	return b
}

// TextMessage is a notification of an inbound text message.
func TextMessage(phoneNumberID, display, from, name, wamid, text string) []byte {
	return notification(phoneNumberID, display, map[string]any{
		"contacts": []any{map[string]any{"profile": map[string]any{"name": name}, "wa_id": from}},
		"messages": []any{map[string]any{
			"from": from, "id": wamid, "timestamp": sentNow(), "type": "text",
			"text": map[string]any{"body": text},
		}},
	})
}

// UserTextMessage is a notification of an inbound text message of a user
// with a business-scoped user id and, when username is set, a username,
// as the Cloud API posts it since 2026: from and wa_id carry the phone
// number, and are left out when from is empty (a username-only user).
// With an empty userID too the message names no sender at all.
func UserTextMessage(phoneNumberID, display, from, userID, username, name, wamid, text string) []byte {
	profile := map[string]any{"name": name}
	if username != "" {
		profile["username"] = username
	}
	contact := map[string]any{"profile": profile}
	message := map[string]any{"id": wamid, "timestamp": sentNow(), "type": "text", "text": map[string]any{"body": text}}
	if userID != "" {
		contact["user_id"], message["from_user_id"] = userID, userID
	}
	if from != "" {
		contact["wa_id"], message["from"] = from, from
	}
	value := map[string]any{"messages": []any{message}}
	if from != "" || userID != "" {
		value["contacts"] = []any{contact}
	}
	return notification(phoneNumberID, display, value)
}

// SystemMessage is a notification of a system message (no contacts
// array, as the Cloud API sends it): typ user_changed_number with the
// user's new phone number newWaID and new user id, or
// user_changed_user_id with the new user id only; from and fromUserID
// are the user's phone number and user id before the change.
func SystemMessage(phoneNumberID, display, from, fromUserID, wamid, typ, body, newWaID, newUserID string) []byte {
	system := map[string]any{"body": body, "type": typ, "user_id": newUserID, "previous_user_id": fromUserID}
	if newWaID != "" {
		system["wa_id"] = newWaID
	}
	message := map[string]any{"id": wamid, "timestamp": sentNow(), "type": "system", "system": system}
	if from != "" {
		message["from"] = from
	}
	if fromUserID != "" {
		message["from_user_id"] = fromUserID
	}
	return notification(phoneNumberID, display, map[string]any{"messages": []any{message}})
}

// ImageMessage is a notification of an inbound image.
func ImageMessage(phoneNumberID, display, from, name, wamid, mediaID, caption string) []byte {
	return notification(phoneNumberID, display, map[string]any{
		"contacts": []any{map[string]any{"profile": map[string]any{"name": name}, "wa_id": from}},
		"messages": []any{map[string]any{
			"from": from, "id": wamid, "timestamp": sentNow(), "type": "image",
			"image": map[string]any{"caption": caption, "mime_type": "image/jpeg", "sha256": "Kp2Wn0bQmIYmB5jGqhRm0YaZ3q3Yq0S1l8n8s3c6A0o=", "id": mediaID},
		}},
	})
}

// Reaction is a notification of a user's reaction to the message
// target; an empty emoji is the reaction taken back (the Cloud API then
// sends no emoji field).
func Reaction(phoneNumberID, display, from, name, wamid, target, emoji string) []byte {
	r := map[string]any{"message_id": target}
	if emoji != "" {
		r["emoji"] = emoji
	}
	return notification(phoneNumberID, display, map[string]any{
		"contacts": []any{map[string]any{"profile": map[string]any{"name": name}, "wa_id": from}},
		"messages": []any{map[string]any{"from": from, "id": wamid, "timestamp": sentNow(), "type": "reaction", "reaction": r}},
	})
}

// Revoke is a notification that the user deleted their message original
// for everyone (a message of type revoke, under its own id wamid).
func Revoke(phoneNumberID, display, from, name, wamid, original string) []byte {
	return notification(phoneNumberID, display, map[string]any{
		"contacts": []any{map[string]any{"profile": map[string]any{"name": name}, "wa_id": from}},
		"messages": []any{map[string]any{"from": from, "id": wamid, "timestamp": "1763800100", "type": "revoke",
			"revoke": map[string]any{"original_message_id": original}}},
	})
}

// EditText is a notification that the user edited their text message
// original, whose text is now text (a message of type edit, under its own
// id wamid).
func EditText(phoneNumberID, display, from, name, wamid, original, text string) []byte {
	return notification(phoneNumberID, display, map[string]any{
		"contacts": []any{map[string]any{"profile": map[string]any{"name": name}, "wa_id": from}},
		"messages": []any{map[string]any{"from": from, "id": wamid, "timestamp": "1763800050", "type": "edit",
			"edit": map[string]any{"original_message_id": original,
				"message": map[string]any{"type": "text", "text": map[string]any{"body": text}}}}},
	})
}

// ReplyText is a notification of a text message that quotes the message
// quoted, sent by quotedFrom (digits; the Cloud API sends only the quoted
// message's id and sender, no text).
func ReplyText(phoneNumberID, display, from, name, wamid, quoted, quotedFrom, text string) []byte {
	return notification(phoneNumberID, display, map[string]any{
		"contacts": []any{map[string]any{"profile": map[string]any{"name": name}, "wa_id": from}},
		"messages": []any{map[string]any{
			"context": map[string]any{"from": quotedFrom, "id": quoted},
			"from":    from, "id": wamid, "timestamp": sentNow(), "type": "text",
			"text": map[string]any{"body": text},
		}},
	})
}

// ButtonReply is a notification of a user's press of the reply button id
// (titled title) of the business's message quoted: an interactive message
// of type button_reply whose context names that message.
func ButtonReply(phoneNumberID, display, from, name, wamid, quoted, id, title string) []byte {
	return notification(phoneNumberID, display, map[string]any{
		"contacts": []any{map[string]any{"profile": map[string]any{"name": name}, "wa_id": from}},
		"messages": []any{map[string]any{
			"context": map[string]any{"from": strings.TrimPrefix(display, "+"), "id": quoted},
			"from":    from, "id": wamid, "timestamp": sentNow(), "type": "interactive",
			"interactive": map[string]any{"type": "button_reply", "button_reply": map[string]any{"id": id, "title": title}},
		}},
	})
}

// MediaMessage is a notification of an inbound message of type typ
// (image, video, audio, document or sticker) whose media object is media:
// {"id", "mime_type", "sha256"} and, by type, "caption", "filename",
// "voice" (audio) or "animated" (sticker).
func MediaMessage(phoneNumberID, display, from, name, wamid, typ string, media map[string]any) []byte {
	return notification(phoneNumberID, display, map[string]any{
		"contacts": []any{map[string]any{"profile": map[string]any{"name": name}, "wa_id": from}},
		"messages": []any{map[string]any{
			"from": from, "id": wamid, "timestamp": sentNow(), "type": typ, typ: media,
		}},
	})
}

// Status is a notification of a delivery status; errorCode, when not
// zero, is the failure's error.
func Status(phoneNumberID, display, wamid, recipient, status string, errorCode int) []byte {
	st := map[string]any{"id": wamid, "status": status, "timestamp": "1763800100", "recipient_id": recipient}
	if status != "failed" {
		st["conversation"] = map[string]any{"id": "8ad4ac1c3b5d1f9f2d1a7e8e0c7b6a5d", "origin": map[string]any{"type": "service"}}
		st["pricing"] = map[string]any{"billable": false, "pricing_model": "PMP", "category": "service", "type": "free_customer_service"}
	}
	if errorCode != 0 {
		e := graphErrors[errorCode]
		title := strings.TrimSpace(e.message[strings.Index(e.message, ")")+1:])
		st["errors"] = []any{map[string]any{
			"code": errorCode, "title": title, "message": title,
			"error_data": map[string]any{"details": e.details},
			"href":       "https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/",
		}}
	}
	return notification(phoneNumberID, display, map[string]any{"statuses": []any{st}})
}

// Sign is the X-Hub-Signature-256 header of body with the app secret.
func Sign(body []byte, appSecret string) string {
	m := hmac.New(sha256.New, []byte(appSecret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}
