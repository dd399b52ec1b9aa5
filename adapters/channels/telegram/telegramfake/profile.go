package telegramfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/jpeg"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// Profile is the bot's profile as setMyName and setMyProfilePhoto left
// it: its name for users without a language of their own, and the JPEG
// bytes of its profile photo.
type Profile struct {
	Name  string
	Photo []byte
}

// Profile returns the bot's profile.
func (s *Server) Profile() Profile {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Profile{Name: s.profile.Name, Photo: append([]byte(nil), s.profile.Photo...)}
}

// rateLimited answers 429 with the retry_after RateLimitNext set, once;
// it reports whether it did.
func (s *Server) rateLimited(w http.ResponseWriter) bool {
	s.mu.Lock()
	retry := s.retryAfter
	s.retryAfter = 0
	s.mu.Unlock()
	if retry > 0 {
		fail(w, http.StatusTooManyRequests, fmt.Sprintf("Too Many Requests: retry after %d", retry), map[string]any{"retry_after": retry})
	}
	return retry > 0
}

// setMyName answers setMyName as the Bot API does: True, keeping the name
// (0-64 characters; empty removes it) when no language_code is given, or
// the error of a name too long.
func (s *Server) setMyName(w http.ResponseWriter, params map[string]any) {
	if s.rateLimited(w) {
		return
	}
	name, _ := params["name"].(string)
	if utf8.RuneCountInString(name) > 64 {
		fail(w, http.StatusBadRequest, "Bad Request: bot name is too long", nil)
		return
	}
	if lang, _ := params["language_code"].(string); lang == "" {
		s.mu.Lock()
		s.profile.Name = name
		s.mu.Unlock()
	}
	reply(w, 200, map[string]any{"ok": true, "result": true})
}

// getMyName answers getMyName: the BotName {"name"} for users without a
// language of their own.
func (s *Server) getMyName(w http.ResponseWriter) {
	s.mu.Lock()
	name := s.profile.Name
	s.mu.Unlock()
	reply(w, 200, map[string]any{"ok": true, "result": map[string]any{"name": name}})
}

// setMyProfilePhoto answers setMyProfilePhoto as the Bot API does. The
// request must be multipart/form-data (a profile photo is always a new
// upload); photo is an InputProfilePhoto, JSON: {"type":"static",
// "photo":"attach://<part>"} names the part that carries the JPEG. It
// answers True and keeps the photo, or the error of a missing or
// malformed photo, an attach:// name without its part, an animated photo
// (not kept by the fake) or bytes that are not a JPEG.
func (s *Server) setMyProfilePhoto(w http.ResponseWriter, r *http.Request, params map[string]any) {
	if s.rateLimited(w) {
		return
	}
	raw, _ := params["photo"].(string)
	var input struct {
		Type  string `json:"type"`
		Photo string `json:"photo"`
	}
	if raw == "" {
		fail(w, http.StatusBadRequest, "Bad Request: parameter \"photo\" is required", nil)
		return
	}
	if json.Unmarshal([]byte(raw), &input) != nil {
		fail(w, http.StatusBadRequest, "Bad Request: can't parse InputProfilePhoto JSON object", nil)
		return
	}
	if input.Type != "static" {
		fail(w, http.StatusBadRequest, "Bad Request: unsupported profile photo type", nil)
		return
	}
	part, ok := strings.CutPrefix(input.Photo, "attach://")
	if !ok || r.MultipartForm == nil || len(r.MultipartForm.File[part]) != 1 {
		fail(w, http.StatusBadRequest, "Bad Request: photo must be uploaded as a new file using multipart/form-data", nil)
		return
	}
	f, err := r.MultipartForm.File[part][0].Open()
	if err != nil {
		fail(w, http.StatusBadRequest, "Bad Request: can't read the uploaded file", nil)
		return
	}
	defer f.Close()
	data, _ := io.ReadAll(f)
	if _, err := jpeg.DecodeConfig(bytes.NewReader(data)); err != nil {
		fail(w, http.StatusBadRequest, "Bad Request: IMAGE_PROCESS_FAILED", nil)
		return
	}
	s.mu.Lock()
	s.profile.Photo = data
	s.mu.Unlock()
	reply(w, 200, map[string]any{"ok": true, "result": true})
}
