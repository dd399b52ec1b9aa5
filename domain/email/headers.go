package email

import (
	"net/textproto"
	"sort"
	"strings"

	"github.com/switchboard-dev/switchboard/domain/failure"
)

// Header is one extra header line of an email.
type Header struct {
	Name  string
	Value string
}

// safeHeaders are the headers a client may set besides cc, bcc and
// reply-to, by lower-case name, with their canonical spelling. Any
// X-prefixed header is allowed too. Everything the service writes itself
// (From, To, Subject, Date, Message-ID, MIME and Content-* headers, DKIM,
// Received, Return-Path, Sender) is refused.
var safeHeaders = map[string]string{
	"in-reply-to":           "In-Reply-To",
	"references":            "References",
	"list-unsubscribe":      "List-Unsubscribe",
	"list-unsubscribe-post": "List-Unsubscribe-Post",
	"list-id":               "List-Id",
	"auto-submitted":        "Auto-Submitted",
	"precedence":            "Precedence",
	"importance":            "Importance",
	"priority":              "Priority",
	"keywords":              "Keywords",
	"comments":              "Comments",
	"organization":          "Organization",
	"thread-topic":          "Thread-Topic",
	"thread-index":          "Thread-Index",
}

// MaxHeaderValue is RFC 5322's line length limit, which a value must fit.
const MaxHeaderValue = 998

// Headers is what a client's headers object yields.
type Headers struct {
	Cc, Bcc, ReplyTo []string
	Extra            []Header
}

// ParseHeaders checks the headers object of a send: cc, bcc and reply-to
// (case-insensitive) as one address, a comma-separated list, or a JSON list
// of addresses; any other name must be a safe header with a string value.
// A CR or LF anywhere (header injection) is refused, as are control
// characters. Problems are reported under field ("headers", name).
func ParseHeaders(raw map[string]any, field string) (Headers, error) {
	var (
		out  Headers
		p    failure.Problems
		seen = map[string]bool{}
	)
	names := make([]string, 0, len(raw))
	for name := range raw {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		value := raw[name]
		lower := strings.ToLower(strings.TrimSpace(name))
		if seen[lower] {
			p.Add("value_error", "header "+name+" is given twice", field, name)
			continue
		}
		seen[lower] = true
		if !validHeaderName(name) {
			p.Add("value_error", "header names are printable ASCII without spaces or colons", field, name)
			continue
		}
		switch lower {
		case "cc", "bcc", "reply-to":
			list, ok := addressList(&p, value, field, name)
			if !ok {
				continue
			}
			switch lower {
			case "cc":
				out.Cc = list
			case "bcc":
				out.Bcc = list
			default:
				out.ReplyTo = list
			}
			continue
		}
		canonical, ok := safeHeaders[lower]
		if !ok && strings.HasPrefix(lower, "x-") {
			canonical, ok = textproto.CanonicalMIMEHeaderKey(name), true
		}
		if !ok {
			p.Add("value_error", "header "+name+" may not be set; allowed are cc, bcc, reply-to, X-* and "+allowedList(), field, name)
			continue
		}
		s, isString := value.(string)
		if !isString {
			p.Add("string_type", "Input should be a valid string", field, name)
			continue
		}
		if typ, message := valueProblem(s); typ != "" {
			p.Add(typ, message, field, name)
			continue
		}
		out.Extra = append(out.Extra, Header{Name: canonical, Value: strings.TrimSpace(s)})
	}
	if err := p.Err(); err != nil {
		return Headers{}, err
	}
	return out, nil
}

// addressList reads cc, bcc or reply-to: a string (one address or a
// comma-separated list) or a list of strings.
func addressList(p *failure.Problems, value any, field, name string) ([]string, bool) {
	var items []string
	switch v := value.(type) {
	case string:
		if typ, message := valueProblem(v); typ != "" {
			p.Add(typ, message, field, name)
			return nil, false
		}
		for _, part := range strings.Split(v, ",") {
			items = append(items, strings.TrimSpace(part))
		}
	case []any:
		for i, it := range v {
			s, ok := it.(string)
			if !ok {
				p.Add("string_type", "Input should be a valid string", field, name, i)
				return nil, false
			}
			if typ, message := valueProblem(s); typ != "" {
				p.Add(typ, message, field, name, i)
				return nil, false
			}
			items = append(items, strings.TrimSpace(s))
		}
	default:
		p.Add("value_error", name+" must be an address, a comma-separated list or a list of addresses", field, name)
		return nil, false
	}
	if len(items) == 0 {
		p.Add("value_error", name+" must name at least one address", field, name)
		return nil, false
	}
	out := make([]string, 0, len(items))
	before := len(*p)
	_, isList := value.([]any)
	for i, it := range items {
		a, err := ParseAddress(it)
		switch {
		case err != nil && isList:
			badAddress(p, field, name, i)
		case err != nil:
			badAddress(p, field, name)
		default:
			out = append(out, a.String())
		}
	}
	return out, len(*p) == before
}

// valueProblem is what a header value must not be: line breaks (header
// injection), other control characters, over 998 bytes; "" when it is
// none. It records nothing, so that the path of a problem, built at run
// time, is built only for one.
func valueProblem(v string) (typ, message string) {
	switch {
	case hasLineBreak(v):
		return "header_injection", "header values must not contain line breaks (CR or LF)"
	case hasControl(v):
		return "value_error", "header values must not contain control characters"
	case len(v) > MaxHeaderValue:
		return "string_too_long", "header values must be at most 998 bytes"
	}
	return "", ""
}

// CheckLine refuses a line break or control character in a single-line
// field such as the subject or an address.
func CheckLine(p *failure.Problems, v string, path ...any) bool {
	if hasLineBreak(v) {
		p.Add("header_injection", "must not contain line breaks (CR or LF)", path...)
		return false
	}
	if hasControl(v) {
		p.Add("value_error", "must not contain control characters", path...)
		return false
	}
	return true
}

// hasLineBreak reports whether s holds a CR or an LF.
func hasLineBreak(s string) bool {
	return strings.IndexByte(s, '\r') >= 0 || strings.IndexByte(s, '\n') >= 0
}

// hasControl reports whether s holds a control character other than a
// tab (CR and LF included).
func hasControl(s string) bool {
	for _, r := range s {
		if (r < 0x20 && r != '\t') || r == 0x7f {
			return true
		}
	}
	return false
}

// validHeaderName is RFC 5322's field-name: printable ASCII but the colon.
func validHeaderName(name string) bool {
	if name == "" || len(name) > 76 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 33 || c > 126 || c == ':' {
			return false
		}
	}
	return true
}

func allowedList() string {
	names := make([]string, 0, len(safeHeaders))
	for _, n := range safeHeaders {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
