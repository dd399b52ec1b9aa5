package email

import (
	"strings"
	"time"
)

// Direction tells a received email from a sent one.
type Direction string

// The directions. Emails sent through the API are outbound; emails the
// SMTP listener accepted for an account's address are inbound.
const (
	Outbound Direction = "outbound"
	Inbound  Direction = "inbound"
)

// Received is the status of an inbound email: it was accepted and parsed.
const Received Status = "received"

// Verdicts of SPF, DKIM and DMARC checks (RFC 8601's result names).
const (
	AuthPass      = "pass"
	AuthFail      = "fail"
	AuthSoftFail  = "softfail"
	AuthNeutral   = "neutral"
	AuthNone      = "none"
	AuthTempError = "temperror"
	AuthPermError = "permerror"
)

// Authentication is what the checks of a received email found: SPF of
// the envelope sender against the connecting address, DKIM signatures,
// and DMARC alignment of the From domain with them.
type Authentication struct {
	SPF string `json:"spf"`
	// SPFDomain is the domain SPF checked (the envelope sender's, or the
	// HELO name for an empty sender).
	SPFDomain string `json:"spf_domain,omitempty"`
	DKIM      string `json:"dkim"`
	// DKIMDomains are the signing domains whose signatures verified.
	DKIMDomains []string `json:"dkim_domains,omitempty"`
	DMARC       string   `json:"dmarc"`
	// DMARCPolicy is the From domain's published policy (none,
	// quarantine, reject) when it has one.
	DMARCPolicy string `json:"dmarc_policy,omitempty"`
	// Reason says why a check could not conclude (a lookup failed, no
	// resolver), where one did not.
	Reason string `json:"reason,omitempty"`
}

// DMARCFailed reports whether the From domain publishes DMARC and the
// email aligns with neither a passing SPF nor a passing DKIM check: the
// From address is likely forged.
func (a Authentication) DMARCFailed() bool { return a.DMARC == AuthFail }

// Spooled is one message the SMTP listener accepted, kept whole before it
// is parsed: the envelope and the raw bytes as received.
type Spooled struct {
	ID string
	// RemoteIP is the connecting client's address; Helo the name it
	// greeted with; MailFrom the envelope sender (empty for a bounce).
	RemoteIP string
	Helo     string
	MailFrom string
	// Recipients are the accepted envelope recipients, each an address of
	// an account; a stored message's are all of one account (ByAccount).
	Recipients []SpooledRecipient
	Raw        []byte
	ReceivedAt time.Time
	// Simulated is true for a message the sandbox route delivered: no
	// server sent it, and nothing checks where it comes from.
	Simulated bool
}

// AccountID is the account of the first recipient: the account of a
// stored message.
func (s Spooled) AccountID() string {
	if len(s.Recipients) == 0 {
		return ""
	}
	return s.Recipients[0].AccountID
}

// ByAccount is the message once per account its recipients belong to,
// each with that account's recipients in their order, in the order the
// accounts first appear: each account keeps its own copy, which goes
// with the account.
func (s Spooled) ByAccount() []Spooled {
	var out []Spooled
	at := map[string]int{}
	for _, r := range s.Recipients {
		i, ok := at[r.AccountID]
		if !ok {
			i = len(out)
			at[r.AccountID] = i
			one := s
			one.Recipients = nil
			out = append(out, one)
		}
		out[i].Recipients = append(out[i].Recipients, r)
	}
	return out
}

// SpooledRecipient is an accepted recipient and the account owning it.
type SpooledRecipient struct {
	Address   string `json:"address"`
	AccountID string `json:"account_id"`
}

// Attachment is a file a received email carries.
type Attachment struct {
	ID        string
	EmailID   string
	AccountID string
	// Name is the file name the sender gave (empty when none);
	// ContentType its declared media type.
	Name        string
	ContentType string
	// ContentID names an inline part the HTML refers to (cid:…).
	ContentID string
	Inline    bool
	// Size is the decoded length in bytes; SHA256 the hex digest of the
	// decoded bytes.
	Size   int64
	SHA256 string
	// Stored is false when the content was dropped for a cap (per
	// email, per account); the metadata is kept either way.
	Stored bool
	// Content is the decoded bytes when Stored (read only where asked
	// for).
	Content   []byte
	CreatedAt time.Time
}

// replyPrefixes are the subject prefixes mail clients put before a reply's
// or a forward's subject, lower-case.
var replyPrefixes = []string{"re:", "fw:", "fwd:", "aw:", "wg:", "sv:", "vs:", "antw:", "r:", "tr:"}

// SubjectKey is a subject without reply and forward prefixes, case and
// runs of spaces: the key that finds a thread by subject.
func SubjectKey(subject string) string {
	s := strings.ToLower(strings.Join(strings.Fields(subject), " "))
	for {
		cut := false
		for _, p := range replyPrefixes {
			if rest, ok := strings.CutPrefix(s, p); ok {
				s, cut = strings.TrimSpace(rest), true
			}
		}
		if !cut {
			return s
		}
	}
}

// IsReplySubject reports whether subject starts with a reply or forward
// prefix.
func IsReplySubject(subject string) bool {
	return SubjectKey(subject) != strings.ToLower(strings.Join(strings.Fields(subject), " "))
}

// ReplySubject is the subject of a reply: "Re: " before the subject,
// unless it has a reply prefix already.
func ReplySubject(subject string) string {
	s := strings.TrimSpace(subject)
	if strings.HasPrefix(strings.ToLower(s), "re:") {
		return s
	}
	return "Re: " + s
}

// ReplyReferences is the References of a reply to an email whose
// Message-ID is messageID and whose References are refs: refs, then
// messageID, the oldest dropped first beyond max ids (RFC 5322 3.6.4,
// keeping the first one, the thread's root).
func ReplyReferences(refs []string, messageID string, max int) []string {
	out := make([]string, 0, len(refs)+1)
	for _, r := range refs {
		if r != messageID {
			out = append(out, r)
		}
	}
	if messageID != "" {
		out = append(out, messageID)
	}
	if len(out) > max && max > 1 {
		out = append(out[:1], out[len(out)-(max-1):]...)
	}
	return out
}

// MessageIDs are the Message-IDs of an In-Reply-To or References value,
// each with its angle brackets, in order; text outside brackets (comments,
// phrases) is skipped.
func MessageIDs(value string) []string {
	var out []string
	for {
		start := strings.IndexByte(value, '<')
		if start < 0 {
			return out
		}
		end := strings.IndexByte(value[start:], '>')
		if end < 0 {
			return out
		}
		if id := value[start : start+end+1]; len(id) > 2 && !strings.ContainsAny(id[1:len(id)-1], " \t\r\n<") {
			out = append(out, id)
		}
		value = value[start+end+1:]
	}
}
