// Package mailparse reads received messages with github.com/emersion/go-message
// (MIME structure, transfer encodings, charsets through its charset
// package, RFC 2047 and 2231 words) into what the email use cases store:
// the addressing headers, the text and HTML parts, attachments and every
// top-level header.
//
// Reading is bounded: a header block of at most MaxHeaderBytes, at most
// MaxParts parts, MaxDepth levels of nesting, MaxHeaders header fields of
// at most MaxHeaderValue bytes each. What lies past a bound, or past
// broken MIME (a missing boundary, bad base64), is not read; the message
// keeps what was read before it and says why in Parsed.Problem. Nothing is
// decompressed: an archive is an attachment like any other.
//
// A delivery status notification (a multipart/report of report-type
// delivery-status, RFC 3464) is read as any message, and its report
// besides: the fields of its message/delivery-status part and the
// Message-ID of the returned message or headers (Parsed.Report).
package mailparse

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // every charset go-message knows
	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-message/textproto"

	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/domain/email"
)

// Limits bound what a parse reads.
type Limits struct {
	MaxHeaderBytes int64
	MaxParts       int
	MaxDepth       int
	MaxHeaders     int
	MaxHeaderValue int
}

// DefaultLimits are the parser's limits unless told otherwise.
var DefaultLimits = Limits{MaxHeaderBytes: 256 << 10, MaxParts: 1000, MaxDepth: 20, MaxHeaders: 500, MaxHeaderValue: 8 << 10}

// Parser reads messages (appemail.Parser).
type Parser struct{ limits Limits }

var _ appemail.Parser = Parser{}

// New returns a parser within limits.
func New(limits Limits) Parser { return Parser{limits: limits} }

// Parse reads raw. It never fails and never panics on any input.
func (p Parser) Parse(raw []byte) appemail.Parsed {
	var out appemail.Parsed
	w := walker{limits: p.limits, out: &out, budget: 2*int64(len(raw)) + 4096}
	ent, err := message.ReadWithOptions(bytes.NewReader(raw), &message.ReadOptions{MaxHeaderBytes: p.limits.MaxHeaderBytes})
	if ent == nil {
		w.problem("the header could not be read: %v", err)
		return out
	}
	if err != nil {
		w.problem("%v", err)
	}
	w.headers(mail.Header{Header: ent.Header})
	if ct, params, _ := ent.Header.ContentType(); ct == "multipart/report" && strings.EqualFold(params["report-type"], "delivery-status") {
		w.report = &email.DeliveryReport{}
	}
	w.walk(ent, 0)
	if w.report != nil && len(w.report.Recipients) > 0 {
		out.Report = w.report
	}
	return out
}

// walker reads one message into out.
type walker struct {
	limits Limits
	out    *appemail.Parsed
	parts  int
	// budget bounds the decoded bytes read from bodies (decoding never
	// more than doubles a message: charset conversion to UTF-8).
	budget  int64
	stopped bool
	// report is the delivery report being read, when the message is
	// one.
	report *email.DeliveryReport
}

// problem records what went wrong first; later ones are left out.
func (w *walker) problem(format string, args ...any) {
	if w.out.Problem == "" {
		w.out.Problem = clean(fmt.Sprintf(format, args...), 500)
	}
}

// headers reads the addressing headers and keeps every field.
func (w *walker) headers(h mail.Header) {
	o := w.out
	if s, err := h.Subject(); err == nil {
		o.Subject = clean(s, email.MaxSubjectLength*4)
	} else {
		o.Subject = clean(h.Get("Subject"), email.MaxSubjectLength*4)
	}
	if from := addresses(h, "From"); len(from) > 0 {
		o.From, o.FromName = from[0].Address, clean(from[0].Name, 200)
	}
	for _, a := range addresses(h, "To") {
		o.To = append(o.To, email.Mailbox{Name: clean(a.Name, 200), Address: a.Address})
	}
	for _, a := range addresses(h, "Cc") {
		o.Cc = append(o.Cc, a.Address)
	}
	for _, a := range addresses(h, "Reply-To") {
		o.ReplyTo = append(o.ReplyTo, a.Address)
	}
	if ids := email.MessageIDs(h.Get("Message-Id")); len(ids) > 0 {
		o.MessageID = ids[0]
	}
	if ids := email.MessageIDs(h.Get("In-Reply-To")); len(ids) > 0 {
		o.InReplyTo = ids[0]
	}
	o.References = email.ReplyReferences(email.MessageIDs(h.Get("References")), "", appemail.MaxReferences)
	if d, err := h.Date(); err == nil {
		o.Date = d.UTC()
	}
	fields := h.Fields()
	for fields.Next() {
		if len(o.Headers) == w.limits.MaxHeaders {
			w.problem("more than %d header fields: the rest were not kept", w.limits.MaxHeaders)
			break
		}
		v, err := fields.Text()
		if err != nil {
			v = fields.Value()
		}
		o.Headers = append(o.Headers, email.Header{Name: clean(fields.Key(), 200), Value: clean(v, w.limits.MaxHeaderValue)})
	}
}

// addresses is the address list of key, as far as it parses; at most
// email.MaxRecipients.
func addresses(h mail.Header, key string) []*mail.Address {
	list, err := h.AddressList(key)
	if err != nil {
		return nil
	}
	if len(list) > email.MaxRecipients {
		list = list[:email.MaxRecipients]
	}
	return list
}

// walk reads entity e at depth, and its parts.
func (w *walker) walk(e *message.Entity, depth int) {
	if w.stopped {
		return
	}
	if w.parts == w.limits.MaxParts {
		w.problem("more than %d parts: the rest were not read", w.limits.MaxParts)
		w.stopped = true
		return
	}
	w.parts++
	if mr := e.MultipartReader(); mr != nil {
		if depth == w.limits.MaxDepth {
			w.problem("parts nested deeper than %d levels were not read", w.limits.MaxDepth)
			return
		}
		for !w.stopped {
			part, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				return
			}
			if part == nil {
				w.problem("a multipart body could not be read: %v", err)
				return
			}
			if err != nil {
				w.problem("%v", err)
			}
			w.walk(part, depth+1)
		}
		return
	}
	w.leaf(e)
}

// leaf reads a part that is not multipart: the message's text or HTML,
// or an attachment.
func (w *walker) leaf(e *message.Entity) {
	ct, params, _ := e.Header.ContentType()
	if ct == "" {
		ct = "text/plain"
	}
	disp, _, _ := e.Header.ContentDisposition()
	ah := mail.AttachmentHeader{Header: e.Header}
	name, err := ah.Filename()
	if err != nil || name == "" {
		name = params["name"]
	}
	body, err := io.ReadAll(io.LimitReader(e.Body, w.budget+1))
	if int64(len(body)) > w.budget {
		body = body[:w.budget]
		w.problem("the decoded message is larger than twice its raw size: the rest was not read")
		w.stopped = true
	}
	w.budget -= int64(len(body))
	if err != nil {
		w.problem("a %s part could not be decoded whole: %v", ct, err)
	}
	if w.report != nil {
		w.readReport(ct, body)
	}
	attachment := strings.EqualFold(disp, "attachment") || name != ""
	switch {
	case !attachment && ct == "text/plain" && w.out.Text == "":
		w.out.Text = strings.ToValidUTF8(string(body), "\uFFFD")
	case !attachment && ct == "text/html" && w.out.HTML == "":
		w.out.HTML = strings.ToValidUTF8(string(body), "\uFFFD")
	default:
		sum := sha256.Sum256(body)
		w.out.Attachments = append(w.out.Attachments, appemail.ParsedAttachment{
			Name: clean(baseName(name), 255), ContentType: clean(ct, 255),
			ContentID: clean(strings.Trim(e.Header.Get("Content-Id"), "<> "), 255),
			Inline:    strings.EqualFold(disp, "inline"), Size: int64(len(body)), SHA256: hex.EncodeToString(sum[:]), Content: body,
		})
	}
}

// maxReportedRecipients bounds the recipients read of a delivery report.
const maxReportedRecipients = email.MaxRecipients

// readReport reads a part of a delivery report: the delivery status
// fields (one block about the message, then one block per recipient), or
// the returned message or its headers, for their Message-ID.
func (w *walker) readReport(ct string, body []byte) {
	switch ct {
	case "message/delivery-status", "message/global-delivery-status":
		r := bufio.NewReader(bytes.NewReader(body))
		for block := 0; len(w.report.Recipients) < maxReportedRecipients; {
			if _, err := r.Peek(1); err != nil {
				return // the end
			}
			// A blank line between blocks reads as an empty block.
			h, err := textproto.ReadHeader(r)
			if h.Len() > 0 {
				w.reportBlock(h, block == 0)
				block++
			}
			if err != nil {
				return
			}
		}
	case "message/rfc822", "text/rfc822-headers", "message/global", "message/global-headers":
		h, _ := textproto.ReadHeader(bufio.NewReader(bytes.NewReader(body)))
		if ids := email.MessageIDs(h.Get("Message-Id")); len(ids) > 0 && w.report.OriginalMessageID == "" {
			w.report.OriginalMessageID = clean(ids[0], 998)
		}
	}
}

// reportBlock reads one block of delivery status fields: the first is
// about the message, each other about a recipient.
func (w *walker) reportBlock(h textproto.Header, first bool) {
	if first && !h.Has("Final-Recipient") {
		w.report.ReportingMTA = clean(email.TypedValue(h.Get("Reporting-Mta")), 255)
		return
	}
	r := email.ReportedRecipient{
		Address:         clean(email.TypedValue(h.Get("Final-Recipient")), email.MaxAddressLength),
		OriginalAddress: clean(email.TypedValue(h.Get("Original-Recipient")), email.MaxAddressLength),
		Action:          strings.ToLower(clean(strings.TrimSpace(h.Get("Action")), 20)),
		Status:          clean(strings.TrimSpace(h.Get("Status")), 20),
		DiagnosticCode:  clean(email.TypedValue(h.Get("Diagnostic-Code")), 500),
	}
	if r.Address != "" {
		w.report.Recipients = append(w.report.Recipients, r)
	}
}

// baseName keeps the last element of a file name a sender gave.
func baseName(name string) string {
	name = strings.ReplaceAll(name, "\\", "/")
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return name
}

// clean is s as valid UTF-8 without control characters but tabs, at
// most n bytes.
func clean(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r == utf8.RuneError || (r < 0x20 && r != '\t') || r == 0x7f {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	if len(s) > n {
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n]
	}
	return s
}
