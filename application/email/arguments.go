package email

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"

	"github.com/switchboard-dev/switchboard/domain/failure"
)

// Transports whose sends take cc, bcc and reply-to as arguments of their
// own (MCP's tools, GraphQL's inputs) rather than inside REST's headers
// object build the object with ArgumentHeaders and name the problems
// after their arguments with ArgumentProblems.

// ArgumentHeaders is the headers object of SendInput and ReplyInput made
// of further headers and the cc, bcc and reply-to lists given apart (nil:
// not given). A cc, bcc or reply-to among the further headers is a
// problem on ("headers", name).
func ArgumentHeaders(further map[string]string, cc, bcc, replyTo []string) (map[string]any, error) {
	headers := map[string]any{}
	for name, v := range further {
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "cc", "bcc", "reply-to":
			return nil, failure.Invalid(failure.Field("value_error", "give "+name+" in its own argument", "headers", name))
		}
		headers[name] = v
	}
	for name, list := range map[string][]string{"cc": cc, "bcc": bcc, "reply-to": replyTo} {
		if list == nil {
			continue
		}
		items := make([]any, len(list))
		for i, a := range list {
			items[i] = a
		}
		headers[name] = items
	}
	return headers, nil
}

// ArgumentProblems is err with its problems about the cc, bcc and
// reply-to headers named after the arguments ArgumentHeaders read them
// from (cc, bcc, reply_to) instead of ("headers", name).
func ArgumentProblems(err error) error {
	fe, ok := errors.AsType[*failure.Error](err)
	if !ok || len(fe.Fields) == 0 {
		return err
	}
	out := *fe
	out.Fields = slices.Clone(fe.Fields)
	for i, f := range out.Fields {
		if len(f.Path) < 2 || f.Path[0] != "headers" {
			continue
		}
		switch name, _ := f.Path[1].(string); strings.ToLower(name) {
		case "cc", "bcc":
			out.Fields[i].Path = append([]any{strings.ToLower(name)}, f.Path[2:]...)
		case "reply-to":
			out.Fields[i].Path = append([]any{"reply_to"}, f.Path[2:]...)
		}
	}
	return &out
}

// Recipients is the recipient_address argument of a send as REST and MCP
// take it: a string (one address, a display name with an address, or
// several separated by commas) or a list of strings, one each.
type Recipients struct {
	Values []string
	// List is true when a list was given.
	List bool
}

// UnmarshalJSON reads a string or a list of strings; anything else is a
// type error naming recipient_address.
func (r *Recipients) UnmarshalJSON(data []byte) error {
	var one string
	if err := json.Unmarshal(data, &one); err == nil {
		r.Values, r.List = []string{one}, false
		return nil
	}
	if err := json.Unmarshal(data, &r.Values); err == nil {
		r.List = true
		return nil
	}
	return &json.UnmarshalTypeError{Value: "recipient_address", Type: reflect.TypeFor[string]()}
}

// MarshalJSON writes the recipients as they were given.
func (r Recipients) MarshalJSON() ([]byte, error) {
	if r.List {
		return json.Marshal(nonNilList(r.Values))
	}
	if len(r.Values) == 0 {
		return []byte(`""`), nil
	}
	return json.Marshal(r.Values[0])
}

// Set puts the recipients in in: RecipientAddress for a string,
// Recipients for a list.
func (r Recipients) Set(in *SendInput) {
	if r.List {
		in.Recipients = nonNilList(r.Values)
		return
	}
	if len(r.Values) > 0 {
		in.RecipientAddress = r.Values[0]
	}
}
