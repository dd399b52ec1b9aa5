package whatsappfake

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// WABAID is the WhatsApp Business Account id of the fake's number (the
// entry id of its notifications), whose templates it serves.
const WABAID = "102290129340398"

// Template is a message template as GET /{waba-id}/message_templates
// lists it: id, name, language, status, category, parameter_format and
// components ({type, format, text, buttons, example}).
type Template map[string]any

// SetTemplates makes the business account's templates ts, listed in that
// order; PageSize bounds each page (25 when zero, as the Graph API).
func (s *Server) SetTemplates(ts ...Template) {
	s.mu.Lock()
	s.templates = append([]Template(nil), ts...)
	s.mu.Unlock()
}

// TemplateListings returns the query of each message_templates request,
// in order.
func (s *Server) TemplateListings() []url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]url.Values(nil), s.listings...)
}

// TemplateSends returns the recorded template messages (a subset of
// Sends).
func (s *Server) TemplateSends() []map[string]any {
	var out []map[string]any
	for _, b := range s.Sends() {
		if b["type"] == "template" {
			out = append(out, b)
		}
	}
	return out
}

// listTemplates answers GET /{version}/{waba-id}/message_templates as the
// Graph API pages edges: data, and paging with cursors.before and
// cursors.after (opaque, here base64 of a position) and next, the URL of
// the next page, left out on the last page. limit sets the page size (at
// most the fake's PageSize); fields, when given, keeps those fields of
// each template (id always).
func (s *Server) listTemplates(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	s.listings = append(s.listings, q)
	all := append([]Template(nil), s.templates...)
	size := s.PageSize
	s.mu.Unlock()
	if size <= 0 {
		size = 25
	}
	if limit, err := strconv.Atoi(q.Get("limit")); err == nil && limit > 0 && limit < size {
		size = limit
	}
	start := 0
	if after := q.Get("after"); after != "" {
		raw, err := base64.RawURLEncoding.DecodeString(after)
		n, convErr := strconv.Atoi(string(raw))
		if err != nil || convErr != nil || n < 0 || n > len(all) {
			graphError(w, 100)
			return
		}
		start = n
	}
	end := min(start+size, len(all))
	var fields []string
	if f := q.Get("fields"); f != "" {
		fields = strings.Split(f, ",")
	}
	data := make([]any, 0, end-start)
	for _, t := range all[start:end] {
		if fields == nil {
			data = append(data, t)
			continue
		}
		kept := map[string]any{"id": t["id"]}
		for _, f := range fields {
			if v, ok := t[f]; ok {
				kept[f] = v
			}
		}
		data = append(data, kept)
	}
	cursor := func(n int) string { return base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(n))) }
	paging := map[string]any{"cursors": map[string]any{"before": cursor(start), "after": cursor(end)}}
	if end < len(all) {
		next := url.Values{}
		for k, v := range q {
			next[k] = v
		}
		next.Set("after", cursor(end))
		paging["next"] = s.URL + r.URL.Path + "?" + next.Encode()
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"data": data, "paging": paging})
}

// templateVariable is a variable of a template text.
var templateVariable = regexp.MustCompile(`\{\{\s*([A-Za-z0-9_]+)\s*\}\}`)

// validTemplateMessage checks a template message as the Cloud API does:
// a template object of exactly name, language {code} and optional
// components, each of type header, body or button (a button with a
// sub_type and an index) with parameters of a known type, each carrying
// its type's object. It answers the Cloud API's errors for a template
// that does not exist in that language (132001) and for parameters that
// do not match its variables (132000), and returns false then.
func (s *Server) validTemplateMessage(w http.ResponseWriter, body map[string]any) bool {
	if body["type"] != "template" {
		return body["template"] == nil
	}
	t, ok := body["template"].(map[string]any)
	language, _ := t["language"].(map[string]any)
	code, _ := language["code"].(string)
	name, _ := t["name"].(string)
	components, hasComponents := t["components"].([]any)
	if !ok || name == "" || code == "" || len(language) != 1 || len(t) != 2+btoi(t["components"] != nil) || (t["components"] != nil && !hasComponents) {
		graphError(w, 100)
		return false
	}
	given := map[string]int{}
	for _, raw := range components {
		c, _ := raw.(map[string]any)
		typ, _ := c["type"].(string)
		params, _ := c["parameters"].([]any)
		switch typ {
		case "header", "body":
			if len(c) != 2 {
				graphError(w, 100)
				return false
			}
		case "button":
			index, _ := c["index"].(string)
			subType, _ := c["sub_type"].(string)
			if _, err := strconv.Atoi(index); err != nil || subType == "" || len(c) != 4 {
				graphError(w, 100)
				return false
			}
			typ += ":" + index
		default:
			graphError(w, 100)
			return false
		}
		for _, p := range params {
			if !validParameter(p) {
				graphError(w, 100)
				return false
			}
		}
		given[typ] = len(params)
	}
	s.mu.Lock()
	var found Template
	for _, tpl := range s.templates {
		if tpl["name"] == name && tpl["language"] == code {
			found = tpl
		}
	}
	s.mu.Unlock()
	if found == nil || found["status"] != "APPROVED" {
		graphError(w, 132001)
		return false
	}
	for typ, want := range wantedParameters(found) {
		if given[typ] != want {
			graphError(w, 132000)
			return false
		}
		delete(given, typ)
	}
	for typ, n := range given {
		if n > 0 && !strings.HasPrefix(typ, "button:") {
			graphError(w, 132000)
			return false
		}
	}
	return true
}

// wantedParameters counts the parameters each component of a template
// takes: the variables of its header and body texts, one for a media
// header, one for a URL button with a variable.
func wantedParameters(t Template) map[string]int {
	want := map[string]int{}
	components, _ := t["components"].([]any)
	for _, raw := range components {
		c, _ := raw.(map[string]any)
		text, _ := c["text"].(string)
		switch c["type"] {
		case "HEADER":
			if f, _ := c["format"].(string); f != "" && f != "TEXT" {
				want["header"] = 1
			} else if n := countVariables(text); n > 0 {
				want["header"] = n
			}
		case "BODY":
			if n := countVariables(text); n > 0 {
				want["body"] = n
			}
		case "BUTTONS":
			buttons, _ := c["buttons"].([]any)
			for i, rb := range buttons {
				b, _ := rb.(map[string]any)
				u, _ := b["url"].(string)
				if b["type"] == "URL" && countVariables(u) > 0 {
					want["button:"+strconv.Itoa(i)] = 1
				}
			}
		}
	}
	return want
}

func countVariables(text string) int {
	seen := map[string]bool{}
	for _, m := range templateVariable.FindAllStringSubmatch(text, -1) {
		seen[m[1]] = true
	}
	return len(seen)
}

// validParameter checks a parameter: a known type and its value under
// the type's name (parameter_name beside it in named templates).
func validParameter(raw any) bool {
	p, _ := raw.(map[string]any)
	typ, _ := p["type"].(string)
	want := 2 + btoi(p["parameter_name"] != nil)
	switch typ {
	case "text", "payload", "coupon_code":
		v, _ := p[typ].(string)
		return v != "" && len(p) == want
	case "currency":
		c, _ := p["currency"].(map[string]any)
		_, hasAmount := c["amount_1000"].(float64)
		return c["fallback_value"] != nil && c["code"] != nil && hasAmount && len(p) == want
	case "date_time":
		d, _ := p["date_time"].(map[string]any)
		return d["fallback_value"] != nil && len(p) == want
	case "image", "video", "document":
		m, _ := p[typ].(map[string]any)
		link, _ := m["link"].(string)
		return strings.HasPrefix(link, "http") && len(p) == want
	case "location":
		l, _ := p["location"].(map[string]any)
		return l["latitude"] != nil && l["longitude"] != nil && len(p) == want
	}
	return false
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// OrderUpdate is a template as the Graph API lists it: a text header, a
// body and a URL button with variables, a footer, a quick reply, in
// language, with status.
func OrderUpdate(id, language, status string) Template {
	return Template{
		"id": id, "name": "order_update", "language": language, "status": status, "category": "UTILITY", "parameter_format": "POSITIONAL",
		"components": []any{
			map[string]any{"type": "HEADER", "format": "TEXT", "text": "Order {{1}}", "example": map[string]any{"header_text": []any{"#123"}}},
			map[string]any{"type": "BODY", "text": "Hi {{1}}, your order of {{2}} ships on {{3}}.",
				"example": map[string]any{"body_text": []any{[]any{"Ann", "$10.00", "Monday"}}}},
			map[string]any{"type": "FOOTER", "text": "Reply STOP to opt out"},
			map[string]any{"type": "BUTTONS", "buttons": []any{
				map[string]any{"type": "URL", "text": "Track", "url": "https://example.com/track/{{1}}", "example": []any{"https://example.com/track/abc"}},
				map[string]any{"type": "QUICK_REPLY", "text": "Stop updates"},
			}},
		},
	}
}

// PlainTemplate is an approved template named name with a body of text
// and no header or buttons.
func PlainTemplate(id, name, language, text string) Template {
	return Template{"id": id, "name": name, "language": language, "status": "APPROVED", "category": "MARKETING",
		"components": []any{map[string]any{"type": "BODY", "text": text}}}
}
