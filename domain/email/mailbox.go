package email

import (
	"net/mail"
	"strings"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/domain/failure"
)

// MaxDisplayName bounds a display name in characters.
const MaxDisplayName = 200

// ParseMailbox reads one mailbox as a header writes it: an address
// (ann@example.org), or a display name and an address in angle brackets
// (Ann Example <ann@example.org>, "Acme Support" <support@acme.example>,
// an RFC 2047 encoded name). The address must pass ParseAddress; the
// name may hold no control characters and at most MaxDisplayName
// characters.
func ParseMailbox(s string) (Mailbox, error) {
	s = strings.TrimSpace(s)
	if s == "" || hasControl(s) {
		return Mailbox{}, errAddress
	}
	if a, err := ParseAddress(s); err == nil {
		return Mailbox{Address: a.String()}, nil
	}
	parsed, err := mail.ParseAddress(s)
	if err != nil {
		return Mailbox{}, errAddress
	}
	return checkedMailbox(parsed)
}

// ParseMailboxList reads a comma-separated list of mailboxes, as
// ParseMailbox reads each ("Doe, Jane" <jane@example.org>, bob@example.org).
func ParseMailboxList(s string) ([]Mailbox, error) {
	s = strings.TrimSpace(s)
	if s == "" || hasControl(s) {
		return nil, errAddress
	}
	list, err := mail.ParseAddressList(s)
	if err != nil || len(list) == 0 {
		return nil, errAddress
	}
	out := make([]Mailbox, 0, len(list))
	for _, parsed := range list {
		m, err := checkedMailbox(parsed)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// checkedMailbox holds what net/mail read to the rules of ParseMailbox.
func checkedMailbox(parsed *mail.Address) (Mailbox, error) {
	a, err := ParseAddress(parsed.Address)
	if err != nil {
		return Mailbox{}, errAddress
	}
	name := strings.TrimSpace(parsed.Name)
	if hasControl(name) || utf8.RuneCountInString(name) > MaxDisplayName {
		return Mailbox{}, errAddress
	}
	return Mailbox{Name: name, Address: a.String()}, nil
}

// CheckMailboxes reads the To recipients of a send: values given as one
// string hold one mailbox or a comma-separated list, values given as a
// list hold one mailbox each. Problems are reported on field (and the
// list index, for a list).
func CheckMailboxes(p *failure.Problems, values []string, isList bool, field string) []Mailbox {
	var out []Mailbox
	for i, v := range values {
		path := []any{field}
		if isList {
			path = append(path, i)
		}
		if !CheckLine(p, v, path...) {
			continue
		}
		var (
			ms  []Mailbox
			err error
		)
		switch {
		case !strings.ContainsAny(v, ",<\"("):
			// One bare address, the common case: no list, name or comment
			// to read.
			var a Address
			if a, err = ParseAddress(v); err == nil {
				ms = []Mailbox{{Address: a.String()}}
			}
		case isList:
			var m Mailbox
			m, err = ParseMailbox(v)
			ms = []Mailbox{m}
		default:
			ms, err = ParseMailboxList(v)
		}
		if err != nil {
			p.Add("value_error", "must be an email address such as someone@example.com or Name <someone@example.com>, or a comma-separated list of them", path...)
			continue
		}
		out = append(out, ms...)
	}
	if len(values) == 0 {
		p.Add("too_short", "must name at least one recipient", field)
	}
	return out
}

// FormatList is the mailboxes as a header value lists them: each as
// Mailbox.String writes it, separated by commas.
func FormatList(ms []Mailbox) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.String()
	}
	return strings.Join(parts, ", ")
}

// Addresses are the mailboxes' addresses.
func Addresses(ms []Mailbox) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Address
	}
	return out
}
