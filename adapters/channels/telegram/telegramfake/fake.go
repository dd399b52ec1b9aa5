// Package telegramfake is a Bot API server for tests, on 127.0.0.1: it
// answers with the request and response JSON of the Bot API reference
// (core.telegram.org/bots/api), errors included, records every call,
// serves getUpdates from a queue, and serves the files a test gives it
// (getFile and the file server's /file/bot<token>/<file_path>).
package telegramfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Call is one recorded Bot API call.
type Call struct {
	Method string
	Params map[string]any
}

// Server is the fake Bot API.
type Server struct {
	URL   string
	Token string

	mu      sync.Mutex
	calls   []Call
	nextID  int64
	updates []json.RawMessage
	wake    chan struct{}
	// Blocked chat ids answer 403 "bot was blocked by the user".
	blocked map[string]bool
	// retryAfter, when set, makes the next send answer 429.
	retryAfter int
	webhook    map[string]any
	// known are the messages of each chat: those the fake sent and those
	// of the updates it was given.
	known map[string]map[int64]bool
	// files are the files users sent, by file_id.
	files map[string]File
	// sent are the messages the fake sent, by chat and message id, as
	// the Bot API returned them (with their reply_markup).
	sent map[string]map[int64]map[string]any
	// queries are the callback query ids the fake issued, true once
	// answered.
	queries   map[string]bool
	answered  []string
	nextQuery int64
	// profile is what setMyName and setMyProfilePhoto set (profile.go).
	profile Profile
	// polling is closed to end the getUpdates request in flight, which
	// another one terminates (nil when none is in flight); polls counts
	// the getUpdates requests, conflicts those terminated.
	polling   chan struct{}
	polls     int
	conflicts int
}

// File is a file the fake keeps for a file_id. Open returns its bytes from
// the start on every download, so that a large file need not be held;
// Size is what getFile and the download declare (0 declares nothing: the
// download is chunked).
type File struct {
	Size int64
	Open func() io.Reader
	// path is the file_path getFile answers.
	path string
}

// AddFile keeps data under the file_id, as a file a user sent.
func (s *Server) AddFile(fileID string, data []byte) {
	s.AddFileStream(fileID, File{Size: int64(len(data)), Open: func() io.Reader { return bytes.NewReader(data) }})
}

// AddFileStream keeps f under the file_id.
func (s *Server) AddFileStream(fileID string, f File) {
	s.mu.Lock()
	f.path = fmt.Sprintf("documents/file_%d", len(s.files))
	s.files[fileID] = f
	s.mu.Unlock()
}

// getFile answers the File of a known file_id, as the Bot API does, or
// its error for a file_id it does not know.
func (s *Server) getFile(w http.ResponseWriter, params map[string]any) {
	id, _ := params["file_id"].(string)
	s.mu.Lock()
	f, ok := s.files[id]
	s.mu.Unlock()
	if !ok {
		fail(w, http.StatusBadRequest, "Bad Request: invalid file_id", nil)
		return
	}
	result := map[string]any{"file_id": id, "file_unique_id": "AgADtQADfw", "file_path": f.path}
	if f.Size > 0 {
		result["file_size"] = f.Size
	}
	reply(w, 200, map[string]any{"ok": true, "result": result})
}

// download serves /file/bot<token>/<file_path> as the file server does:
// the bytes as application/octet-stream, or 404 for a wrong token or path.
func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	rest, _ := strings.CutPrefix(r.URL.Path, "/file/bot")
	token, path, _ := strings.Cut(rest, "/")
	var (
		f  File
		ok bool
	)
	s.mu.Lock()
	for _, file := range s.files {
		if file.path == path {
			f, ok = file, true
		}
	}
	s.mu.Unlock()
	if token != s.Token || !ok || r.Method != http.MethodGet {
		fail(w, http.StatusNotFound, "Not Found", nil)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	if f.Size > 0 {
		w.Header().Set("Content-Length", strconv.FormatInt(f.Size, 10))
	}
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, f.Open())
}

// New starts a fake for the bot with token.
func New(t testing.TB, token string) *Server {
	s := &Server{Token: token, nextID: 100, blocked: map[string]bool{}, wake: make(chan struct{}, 1), known: map[string]map[int64]bool{}, files: map[string]File{},
		sent: map[string]map[int64]map[string]any{}, queries: map[string]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Settings are a number's provider settings pointing at this fake.
func (s *Server) Settings() map[string]string {
	return map[string]string{"bot_token": s.Token, "api_base_url": s.URL}
}

// Block makes sends and chat actions to chat answer 403.
func (s *Server) Block(chat string) { s.mu.Lock(); s.blocked[chat] = true; s.mu.Unlock() }

// RateLimitNext makes the next send, setMyName or setMyProfilePhoto
// answer 429 with retry_after.
func (s *Server) RateLimitNext(seconds int) { s.mu.Lock(); s.retryAfter = seconds; s.mu.Unlock() }

// Remember records the message of an update a test delivered itself (by
// webhook), so that replies and reactions may name it.
func (s *Server) Remember(update []byte) {
	var u struct {
		Message *struct {
			MessageID int64 `json:"message_id"`
			Chat      struct {
				ID int64 `json:"id"`
			} `json:"chat"`
		} `json:"message"`
	}
	if json.Unmarshal(update, &u) != nil || u.Message == nil {
		return
	}
	s.mu.Lock()
	s.remember(fmt.Sprint(u.Message.Chat.ID), u.Message.MessageID)
	s.mu.Unlock()
}

// remember records message id of chat; the caller holds mu.
func (s *Server) remember(chat string, id int64) {
	if s.known[chat] == nil {
		s.known[chat] = map[int64]bool{}
	}
	s.known[chat][id] = true
}

// knows tells whether chat has message id.
func (s *Server) knows(chat string, id any) bool {
	n, ok := id.(float64)
	s.mu.Lock()
	defer s.mu.Unlock()
	return ok && s.known[chat][int64(n)]
}

// Queue adds an update for getUpdates.
func (s *Server) Queue(update []byte) {
	s.Remember(update)
	s.mu.Lock()
	s.updates = append(s.updates, update)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Calls returns the recorded calls of method ("" for all).
func (s *Server) Calls(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Webhook is what the last setWebhook set.
func (s *Server) Webhook() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.webhook
}

func reply(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func fail(w http.ResponseWriter, code int, description string, params map[string]any) {
	body := map[string]any{"ok": false, "error_code": code, "description": description}
	if params != nil {
		body["parameters"] = params
	}
	reply(w, code, body)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/file/bot") {
		s.download(w, r)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || r.Method != http.MethodPost {
		fail(w, http.StatusNotFound, "Not Found", nil)
		return
	}
	if token != s.Token {
		fail(w, http.StatusUnauthorized, "Unauthorized", nil)
		return
	}
	params := map[string]any{}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		if err := r.ParseMultipartForm(10 << 20); err != nil {
			fail(w, http.StatusBadRequest, "Bad Request: can't parse multipart", nil)
			return
		}
		for k, v := range r.MultipartForm.Value {
			params[k] = v[0]
		}
		for k := range r.MultipartForm.File {
			params[k] = "<upload>"
		}
	} else {
		raw, _ := io.ReadAll(r.Body)
		if len(raw) > 0 && json.Unmarshal(raw, &params) != nil {
			fail(w, http.StatusBadRequest, "Bad Request: can't parse JSON object", nil)
			return
		}
	}
	if method == "getUpdates" {
		s.getUpdates(w, r, params)
		return
	}
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: method, Params: params})
	s.mu.Unlock()
	chat := fmt.Sprint(params["chat_id"])
	switch method {
	case "getMe":
		reply(w, 200, map[string]any{"ok": true, "result": map[string]any{"id": 7000001, "is_bot": true, "first_name": "Switchboard Test", "username": "switchboard_test_bot", "can_join_groups": true}})
	case "getWebhookInfo":
		s.mu.Lock()
		url, _ := s.webhook["url"].(string)
		s.mu.Unlock()
		reply(w, 200, map[string]any{"ok": true, "result": map[string]any{"url": url, "has_custom_certificate": false, "pending_update_count": 0}})
	case "setWebhook":
		s.mu.Lock()
		s.webhook = params
		s.mu.Unlock()
		reply(w, 200, map[string]any{"ok": true, "result": true, "description": "Webhook was set"})
	case "deleteWebhook":
		s.mu.Lock()
		s.webhook = nil
		s.mu.Unlock()
		reply(w, 200, map[string]any{"ok": true, "result": true, "description": "Webhook was deleted"})
	case "sendMessage", "sendPhoto", "sendVideo", "sendAudio", "sendDocument", "sendLocation", "sendVenue":
		s.send(w, method, chat, params)
	case "setChatTitle", "setChatDescription", "setChatPhoto", "setChatPermissions", "promoteChatMember",
		"banChatMember", "unbanChatMember", "leaveChat":
		if params["chat_id"] == nil {
			fail(w, http.StatusBadRequest, "Bad Request: chat_id is empty", nil)
			return
		}
		reply(w, 200, map[string]any{"ok": true, "result": true})
	case "sendChatAction":
		s.chatAction(w, chat, params)
	case "setMessageReaction":
		s.setReaction(w, chat, params)
	case "getFile":
		s.getFile(w, params)
	case "answerCallbackQuery":
		s.answerCallback(w, params)
	case "setMyName":
		s.setMyName(w, params)
	case "getMyName":
		s.getMyName(w)
	case "setMyProfilePhoto":
		s.setMyProfilePhoto(w, r, params)
	case "exportChatInviteLink":
		reply(w, 200, map[string]any{"ok": true, "result": "https://t.me/+AbCdEfGhIjKlMnOp"})
	default:
		fail(w, http.StatusNotFound, "Not Found: method not found", nil)
	}
}

func (s *Server) send(w http.ResponseWriter, method, chat string, params map[string]any) {
	s.mu.Lock()
	blocked, retry := s.blocked[chat], s.retryAfter
	s.retryAfter = 0
	s.nextID++
	id := s.nextID
	s.mu.Unlock()
	switch {
	case params["chat_id"] == nil:
		fail(w, http.StatusBadRequest, "Bad Request: chat_id is empty", nil)
		return
	case retry > 0:
		fail(w, http.StatusTooManyRequests, fmt.Sprintf("Too Many Requests: retry after %d", retry), map[string]any{"retry_after": retry})
		return
	case blocked:
		fail(w, http.StatusForbidden, "Forbidden: bot was blocked by the user", nil)
		return
	case method == "sendMessage" && params["text"] == nil:
		fail(w, http.StatusBadRequest, "Bad Request: message text is empty", nil)
		return
	case params["reply_parameters"] != nil && !s.knows(chat, replyTo(params)):
		fail(w, http.StatusBadRequest, "Bad Request: message to be replied not found", nil)
		return
	}
	if problem := keyboardProblem(params["reply_markup"]); problem != "" {
		fail(w, http.StatusBadRequest, "Bad Request: "+problem, nil)
		return
	}
	s.mu.Lock()
	s.remember(chat, id)
	s.mu.Unlock()
	var chatID int64
	_, _ = fmt.Sscan(chat, &chatID)
	chatType := "private"
	if chatID < 0 {
		chatType = "supergroup"
	}
	msg := map[string]any{
		"message_id": id, "date": time.Now().Unix(),
		"from": map[string]any{"id": 7000001, "is_bot": true, "first_name": "Switchboard Test", "username": "switchboard_test_bot"},
		"chat": map[string]any{"id": chatID, "type": chatType},
	}
	if t, ok := params["text"]; ok {
		msg["text"] = t
	}
	if k, ok := params["reply_markup"]; ok {
		msg["reply_markup"] = k
	}
	s.mu.Lock()
	if s.sent[chat] == nil {
		s.sent[chat] = map[int64]map[string]any{}
	}
	s.sent[chat][id] = msg
	s.mu.Unlock()
	reply(w, 200, map[string]any{"ok": true, "result": msg})
}

// keyboardProblem checks a send's reply_markup as the Bot API checks an
// inline keyboard of callback buttons: an object with exactly
// inline_keyboard, an array of rows of buttons, each with a non-empty
// text and callback_data of 1 to 64 bytes. It returns the Bot API's
// error description, or "" for none (or no markup).
func keyboardProblem(markup any) string {
	if markup == nil {
		return ""
	}
	m, ok := markup.(map[string]any)
	rows, isList := m["inline_keyboard"].([]any)
	if !ok || !isList || len(m) != 1 {
		return "can't parse reply keyboard markup JSON object"
	}
	for _, raw := range rows {
		row, ok := raw.([]any)
		if !ok {
			return "field \"inline_keyboard\" of the InlineKeyboardMarkup must be an Array of Arrays"
		}
		for _, rb := range row {
			b, _ := rb.(map[string]any)
			text, _ := b["text"].(string)
			data, isString := b["callback_data"].(string)
			switch {
			case text == "":
				return "can't parse inline keyboard button: Text must be non-empty"
			case !isString || len(b) != 2:
				return "can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard"
			case data == "" || len(data) > 64:
				return "BUTTON_DATA_INVALID"
			}
		}
	}
	return ""
}

// answerCallback answers answerCallbackQuery as the Bot API does: True
// for a query the fake issued and nobody answered yet, else the error of
// an invalid or expired query.
func (s *Server) answerCallback(w http.ResponseWriter, params map[string]any) {
	id, _ := params["callback_query_id"].(string)
	s.mu.Lock()
	answered, issued := s.queries[id]
	if issued && !answered {
		s.queries[id] = true
		s.answered = append(s.answered, id)
	}
	s.mu.Unlock()
	if !issued || answered {
		fail(w, http.StatusBadRequest, "Bad Request: query is too old and response timeout expired or query ID is invalid", nil)
		return
	}
	reply(w, 200, map[string]any{"ok": true, "result": true})
}

// ButtonPress is an update with a callback query: the user of a private
// chat pressed the inline keyboard button whose callback_data is data on
// the message messageID the fake sent to that chat. The query's message
// is that message as sent, with its reply_markup when keyboard is set
// (Telegram shows it; without it Switchboard finds the title itself). It
// returns the update and the query's id, which answerCallbackQuery must
// then name.
func (s *Server) ButtonPress(updateID, messageID, userID int64, firstName, data string, keyboard bool) ([]byte, string) {
	chat := strconv.FormatInt(userID, 10)
	s.mu.Lock()
	s.nextQuery++
	id := fmt.Sprintf("4382%015d", s.nextQuery)
	s.queries[id] = false
	msg := map[string]any{"message_id": messageID, "date": 1763800000,
		"from": map[string]any{"id": 7000001, "is_bot": true, "first_name": "Switchboard Test", "username": "switchboard_test_bot"},
		"chat": map[string]any{"id": userID, "first_name": firstName, "type": "private"}}
	for k, v := range s.sent[chat][messageID] {
		if k == "text" || (k == "reply_markup" && keyboard) {
			msg[k] = v
		}
	}
	s.mu.Unlock()
	return mustJSON(map[string]any{
		"update_id": updateID,
		"callback_query": map[string]any{
			"id": id, "from": map[string]any{"id": userID, "is_bot": false, "first_name": firstName, "language_code": "en"},
			"message": msg, "chat_instance": "-7380283726412345678", "data": data,
		},
	}), id
}

// Answered is the callback query ids answered with answerCallbackQuery
// (and accepted), in order.
func (s *Server) Answered() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.answered...)
}

// replyTo is the message_id of a send's reply_parameters.
func replyTo(params map[string]any) any {
	rp, _ := params["reply_parameters"].(map[string]any)
	return rp["message_id"]
}

// AllowedReactions are the emoji a bot may react with (the Bot API's
// ReactionTypeEmoji list).
var AllowedReactions = map[string]bool{}

func init() {
	for _, e := range strings.Fields("👍 👎 ❤ 🔥 🥰 👏 😁 🤔 🤯 😱 🤬 😢 🎉 🤩 🤮 💩 🙏 👌 🕊 🤡 🥱 🥴 😍 🐳 ❤‍🔥 🌚 🌭 💯 🤣 ⚡ 🍌 🏆 💔 🤨 😐 🍓 🍾 💋 🖕 😈 😴 😭 🤓 👻 👨‍💻 👀 🎃 🙈 😇 😨 🤝 ✍ 🤗 🫡 🎅 🎄 ☃ 💅 🤪 🗿 🆒 💘 🙉 🦄 😘 💊 🙊 😎 👾 🤷‍♂ 🤷 🤷‍♀ 😡") {
		AllowedReactions[e] = true
	}
}

// setReaction answers setMessageReaction as the Bot API does: True, or
// the error of a missing chat, an unknown message, or a reaction that is
// not one of the allowed emoji.
func (s *Server) setReaction(w http.ResponseWriter, chat string, params map[string]any) {
	list, isList := params["reaction"].([]any)
	valid := isList || params["reaction"] == nil
	for _, r := range list {
		rt, ok := r.(map[string]any)
		emoji, _ := rt["emoji"].(string)
		valid = valid && ok && rt["type"] == "emoji" && AllowedReactions[emoji]
	}
	switch {
	case params["chat_id"] == nil:
		fail(w, http.StatusBadRequest, "Bad Request: chat_id is empty", nil)
	case !s.knows(chat, params["message_id"]):
		fail(w, http.StatusBadRequest, "Bad Request: message to react not found", nil)
	case !valid:
		fail(w, http.StatusBadRequest, "Bad Request: REACTION_INVALID", nil)
	default:
		reply(w, 200, map[string]any{"ok": true, "result": true})
	}
}

// chatActions are the actions sendChatAction accepts.
var chatActions = map[string]bool{
	"typing": true, "upload_photo": true, "record_video": true, "upload_video": true, "record_voice": true,
	"upload_voice": true, "upload_document": true, "choose_sticker": true, "find_location": true,
	"record_video_note": true, "upload_video_note": true,
}

// chatAction answers sendChatAction as the Bot API does: True, or the
// error of a missing chat, an unknown action or a blocked user.
func (s *Server) chatAction(w http.ResponseWriter, chat string, params map[string]any) {
	s.mu.Lock()
	blocked := s.blocked[chat]
	s.mu.Unlock()
	action, _ := params["action"].(string)
	switch {
	case params["chat_id"] == nil:
		fail(w, http.StatusBadRequest, "Bad Request: chat_id is empty", nil)
	case action == "":
		fail(w, http.StatusBadRequest, "Bad Request: action is empty", nil)
	case !chatActions[action]:
		fail(w, http.StatusBadRequest, "Bad Request: wrong parameter action in request", nil)
	case blocked:
		fail(w, http.StatusForbidden, "Forbidden: bot was blocked by the user", nil)
	default:
		reply(w, 200, map[string]any{"ok": true, "result": true})
	}
}

// delivered tells whether the Bot API delivers an update of the types
// allowed_updates lists: without a list, every type but chat_member,
// message_reaction and message_reaction_count.
func delivered(update []byte, allowedUpdates any) bool {
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(update, &fields)
	list, listed := allowedUpdates.([]any)
	for name := range fields {
		if name == "update_id" {
			continue
		}
		if !listed || len(list) == 0 {
			return name != "chat_member" && name != "message_reaction" && name != "message_reaction_count"
		}
		return slices.Contains(list, any(name))
	}
	return false
}

// getUpdates answers the queued updates from offset on of the types
// allowed_updates lists, waiting up to the timeout (at most a second
// here) when there are none. As the Bot API does, an offset confirms
// the updates before it, which are never answered again, and a request
// while another is in flight ends that one with 409 Conflict: a bot has
// one getUpdates caller at a time.
func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request, params map[string]any) {
	offset, _ := params["offset"].(float64)
	deadline := time.After(time.Second)
	mine := make(chan struct{})
	s.mu.Lock()
	s.polls++
	if s.polling != nil {
		close(s.polling)
		s.conflicts++
	}
	s.polling = mine
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.polling == mine {
			s.polling = nil
		}
		s.mu.Unlock()
	}()
	for {
		s.mu.Lock()
		if s.webhook != nil && s.webhook["url"] != "" {
			s.mu.Unlock()
			fail(w, http.StatusConflict, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first", nil)
			return
		}
		var out, kept []json.RawMessage
		for _, u := range s.updates {
			var head struct {
				UpdateID int64 `json:"update_id"`
			}
			_ = json.Unmarshal(u, &head)
			if offset > 0 && float64(head.UpdateID) < offset {
				continue // confirmed: forgotten
			}
			kept = append(kept, u)
			if delivered(u, params["allowed_updates"]) {
				out = append(out, u)
			}
		}
		s.updates = kept
		s.mu.Unlock()
		if len(out) > 0 {
			reply(w, 200, map[string]any{"ok": true, "result": out})
			return
		}
		select {
		case <-s.wake:
		case <-mine:
			fail(w, http.StatusConflict, "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running", nil)
			return
		case <-deadline:
			reply(w, 200, map[string]any{"ok": true, "result": []any{}})
			return
		case <-r.Context().Done():
			return
		}
	}
}

// Polls counts the getUpdates requests.
func (s *Server) Polls() int { s.mu.Lock(); defer s.mu.Unlock(); return s.polls }

// Conflicts counts the getUpdates requests another one terminated.
func (s *Server) Conflicts() int { s.mu.Lock(); defer s.mu.Unlock(); return s.conflicts }

// PrivateText is an update with a text message from a user in their
// private chat with the bot.
func PrivateText(updateID, messageID, userID int64, username, firstName, text string) []byte {
	return mustJSON(map[string]any{
		"update_id": updateID,
		"message": map[string]any{
			"message_id": messageID, "date": 1763800000,
			"from": map[string]any{"id": userID, "is_bot": false, "first_name": firstName, "username": username, "language_code": "en"},
			"chat": map[string]any{"id": userID, "first_name": firstName, "username": username, "type": "private"},
			"text": text,
		},
	})
}

// PrivateMedia is an update with a media message from a user in their
// private chat with the bot: field is photo (media is then the []any of
// PhotoSize objects, smallest first), video, audio, voice, document or
// sticker, and media its object ({"file_id", "file_unique_id",
// "file_size", "mime_type", "file_name", …}).
func PrivateMedia(updateID, messageID, userID int64, firstName, field string, media any, caption string) []byte {
	msg := map[string]any{
		"message_id": messageID, "date": 1763800000,
		"from": map[string]any{"id": userID, "is_bot": false, "first_name": firstName, "language_code": "en"},
		"chat": map[string]any{"id": userID, "first_name": firstName, "type": "private"},
		field:  media,
	}
	if caption != "" {
		msg["caption"] = caption
	}
	return mustJSON(map[string]any{"update_id": updateID, "message": msg})
}

// SharedContact is an update where a user shares their own phone number.
func SharedContact(updateID, messageID, userID int64, firstName, phone string) []byte {
	return mustJSON(map[string]any{
		"update_id": updateID,
		"message": map[string]any{
			"message_id": messageID, "date": 1763800000,
			"from":    map[string]any{"id": userID, "is_bot": false, "first_name": firstName},
			"chat":    map[string]any{"id": userID, "first_name": firstName, "type": "private"},
			"contact": map[string]any{"phone_number": phone, "first_name": firstName, "user_id": userID},
		},
	})
}

// GroupText is an update with a text message in a group chat.
func GroupText(updateID, messageID, chatID int64, title string, userID int64, firstName, text string) []byte {
	return mustJSON(map[string]any{
		"update_id": updateID,
		"message": map[string]any{
			"message_id": messageID, "date": 1763800000,
			"from": map[string]any{"id": userID, "is_bot": false, "first_name": firstName},
			"chat": map[string]any{"id": chatID, "title": title, "type": "supergroup"},
			"text": text,
		},
	})
}

// PrivateReaction is an update with a user's change of reactions on a
// message of their private chat with the bot: emoji is the new reaction,
// empty when the user took it back (old is the one they had).
func PrivateReaction(updateID, messageID, userID int64, firstName, old, emoji string) []byte {
	list := func(e string) []any {
		if e == "" {
			return []any{}
		}
		return []any{map[string]any{"type": "emoji", "emoji": e}}
	}
	return mustJSON(map[string]any{
		"update_id": updateID,
		"message_reaction": map[string]any{
			"chat":       map[string]any{"id": userID, "first_name": firstName, "type": "private"},
			"message_id": messageID, "date": 1763800000,
			"user":         map[string]any{"id": userID, "is_bot": false, "first_name": firstName},
			"old_reaction": list(old), "new_reaction": list(emoji),
		},
	})
}

// PrivateEdit is an update with a user's edit of their text message
// messageID in their private chat with the bot: text is the new text,
// editDate when they edited it.
func PrivateEdit(updateID, messageID, userID int64, firstName, text string, editDate int64) []byte {
	return mustJSON(map[string]any{
		"update_id": updateID,
		"edited_message": map[string]any{
			"message_id": messageID, "date": 1763800000, "edit_date": editDate,
			"from": map[string]any{"id": userID, "is_bot": false, "first_name": firstName, "language_code": "en"},
			"chat": map[string]any{"id": userID, "first_name": firstName, "type": "private"},
			"text": text,
		},
	})
}

// PrivateReply is an update with a text message from a user that answers
// the message quoted (its text quotedText, sent by the bot when fromBot).
func PrivateReply(updateID, messageID, userID int64, firstName, text string, quoted int64, quotedText string, fromBot bool) []byte {
	from := map[string]any{"id": userID, "is_bot": false, "first_name": firstName}
	if fromBot {
		from = map[string]any{"id": 7000001, "is_bot": true, "first_name": "Switchboard Test", "username": "switchboard_test_bot"}
	}
	chat := map[string]any{"id": userID, "first_name": firstName, "type": "private"}
	return mustJSON(map[string]any{
		"update_id": updateID,
		"message": map[string]any{
			"message_id": messageID, "date": 1763800000,
			"from": map[string]any{"id": userID, "is_bot": false, "first_name": firstName},
			"chat": chat, "text": text,
			"reply_to_message": map[string]any{"message_id": quoted, "date": 1763799000, "from": from, "chat": chat, "text": quotedText},
		},
	})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
