package whatsappfake

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// AppID is the Meta app id of the fake's number, which its Resumable
// Upload sessions belong to.
const AppID = "1289374650123456"

// Upload is a file sent to an upload session of the Resumable Upload API,
// as the fake received it.
type Upload struct {
	// Session is the query that opened the session: file_name,
	// file_length, file_type.
	Session url.Values
	// Authorization and FileOffset are the headers of the upload.
	Authorization string
	FileOffset    string
	Data          []byte
	// Handle is the file handle the fake answered.
	Handle string
}

// uploadSession is a session opened and not yet uploaded to.
type uploadSession struct {
	query url.Values
	sig   string
}

// profileState is the business profile the fake keeps, with the upload
// sessions and uploads that lead to its picture.
type profileState struct {
	sessions map[string]uploadSession
	uploads  []Upload
	// posts are the whatsapp_business_profile bodies accepted, in order.
	posts []map[string]any
	// picture is the upload whose handle the profile's picture was last
	// set with.
	picture *Upload
}

// Uploads returns the files uploaded to the fake's upload sessions, in
// order.
func (s *Server) Uploads() []Upload {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Upload(nil), s.profile.uploads...)
}

// BusinessProfilePosts returns the bodies of the accepted business
// profile updates, in order.
func (s *Server) BusinessProfilePosts() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.profile.posts...)
}

// ProfilePicture returns the bytes of the business profile's picture
// (nil when none was set) and its file type.
func (s *Server) ProfilePicture() ([]byte, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.profile.picture == nil {
		return nil, ""
	}
	return s.profile.picture.Data, s.profile.picture.Session.Get("file_type")
}

// uploadFileTypes are the MIME types the Resumable Upload API takes.
var uploadFileTypes = map[string]bool{"application/pdf": true, "image/jpeg": true, "image/jpg": true, "image/png": true, "video/mp4": true}

// serveProfile answers the calls of the business profile and its
// picture, and reports whether the request was one of them:
//
//	POST /{version}/{app-id}/uploads?file_name=&file_length=&file_type=  (Bearer token)
//	  → {"id": "upload:<session>?sig=<signature>"}
//	POST /{version}/upload:<session>?sig=<signature>  (Authorization: OAuth <token>, file_offset: 0, the bytes)
//	  → {"h": "<handle>"}
//	POST /{version}/{phone-number-id}/whatsapp_business_profile  (Bearer token)
//	  {"messaging_product": "whatsapp", "profile_picture_handle": "<handle>", …} → {"success": true}
//	GET  /{version}/{phone-number-id}/whatsapp_business_profile?fields=…
//	  → {"data": [{"messaging_product": "whatsapp", "profile_picture_url": …, …}]}
//
// Errors are the Graph API's: 190 for a wrong token, 100 for anything
// malformed (an unknown app, a file type the API does not take, a length
// or offset that does not match, an unknown session or handle).
func (s *Server) serveProfile(w http.ResponseWriter, r *http.Request) bool {
	prefix := "/" + Version + "/"
	path, ok := strings.CutPrefix(r.URL.Path, prefix)
	if !ok {
		return false
	}
	switch {
	case r.Method == http.MethodPost && strings.HasPrefix(path, "upload:"):
		s.receiveUpload(w, r, path)
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/uploads"):
		if !s.bearer(w, r) {
			return true
		}
		s.openUploadSession(w, r, strings.TrimSuffix(path, "/uploads"))
	case path == s.PhoneNumberID+"/whatsapp_business_profile" && (r.Method == http.MethodPost || r.Method == http.MethodGet):
		if !s.bearer(w, r) {
			return true
		}
		if r.Method == http.MethodGet {
			s.readBusinessProfile(w)
			return true
		}
		s.updateBusinessProfile(w, r)
	default:
		return false
	}
	return true
}

// bearer checks the request's access token, answering 190 when it is
// wrong.
func (s *Server) bearer(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get("Authorization") != "Bearer "+s.Token {
		graphError(w, 190)
		return false
	}
	return true
}

func answer(w http.ResponseWriter, body any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// openUploadSession opens an upload session of the app for the file the
// query describes.
func (s *Server) openUploadSession(w http.ResponseWriter, r *http.Request, app string) {
	if app != AppID {
		unknownObject(w, app)
		return
	}
	q := r.URL.Query()
	length, err := strconv.ParseInt(q.Get("file_length"), 10, 64)
	if err != nil || length <= 0 || !uploadFileTypes[q.Get("file_type")] {
		graphError(w, 100)
		return
	}
	id := "upload:" + base64.RawStdEncoding.EncodeToString([]byte("attachment:"+randomHex(8)))
	sig := "ARZ" + randomHex(12)
	s.mu.Lock()
	if s.profile.sessions == nil {
		s.profile.sessions = map[string]uploadSession{}
	}
	s.profile.sessions[id] = uploadSession{query: q, sig: sig}
	s.mu.Unlock()
	answer(w, map[string]any{"id": id + "?sig=" + sig})
}

// receiveUpload takes the bytes of an open session, all at offset 0, and
// answers the file's handle.
func (s *Server) receiveUpload(w http.ResponseWriter, r *http.Request, id string) {
	if r.Header.Get("Authorization") != "OAuth "+s.Token {
		graphError(w, 190)
		return
	}
	data, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	session, ok := s.profile.sessions[id]
	if !ok || r.URL.Query().Get("sig") != session.sig || r.Header.Get("file_offset") != "0" ||
		strconv.Itoa(len(data)) != session.query.Get("file_length") {
		graphError(w, 100)
		return
	}
	delete(s.profile.sessions, id)
	handle := fmt.Sprintf("4::%s:ARb%s", base64.StdEncoding.EncodeToString([]byte(session.query.Get("file_type"))), randomHex(16))
	s.profile.uploads = append(s.profile.uploads, Upload{Session: session.query, Authorization: r.Header.Get("Authorization"),
		FileOffset: r.Header.Get("file_offset"), Data: data, Handle: handle})
	answer(w, map[string]any{"h": handle})
}

// businessProfileFields are the fields a business profile update may set.
var businessProfileFields = map[string]bool{"messaging_product": true, "about": true, "address": true, "description": true,
	"email": true, "vertical": true, "websites": true, "profile_picture_handle": true}

// updateBusinessProfile accepts an update naming messaging_product
// whatsapp, known fields only, and a handle the fake issued.
func (s *Server) updateBusinessProfile(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if json.NewDecoder(r.Body).Decode(&body) != nil || body["messaging_product"] != "whatsapp" {
		graphError(w, 100)
		return
	}
	for k := range body {
		if !businessProfileFields[k] {
			graphError(w, 100)
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if handle, given := body["profile_picture_handle"]; given {
		var found *Upload
		for _, u := range s.profile.uploads {
			if u.Handle == handle {
				found = &u
			}
		}
		if found == nil {
			graphError(w, 100)
			return
		}
		s.profile.picture = found
	}
	s.profile.posts = append(s.profile.posts, body)
	answer(w, map[string]any{"success": true})
}

// readBusinessProfile answers the business profile, its picture as a URL
// when one was set.
func (s *Server) readBusinessProfile(w http.ResponseWriter) {
	s.mu.Lock()
	profile := map[string]any{"messaging_product": "whatsapp"}
	if s.profile.picture != nil {
		profile["profile_picture_url"] = "https://pps.whatsapp.net/v/t61.24694-24/" + s.profile.picture.Handle[len(s.profile.picture.Handle)-8:] + ".jpg"
	}
	s.mu.Unlock()
	answer(w, map[string]any{"data": []any{profile}})
}
