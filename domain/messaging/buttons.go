package messaging

import (
	"fmt"
	"strings"

	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// Button is a reply button the agent offers with a text message: the user
// sees Title, and pressing it sends back ID.
type Button struct {
	ID    string
	Title string
}

// ButtonRules are a service's limits on the reply buttons of a message.
type ButtonRules struct {
	// Max is how many buttons one message may carry.
	Max int
	// MaxTitle is the longest title, in user-perceived characters.
	MaxTitle int
	// MaxIDBytes is the longest id, in bytes.
	MaxIDBytes int
}

// MaxButtonIDBytes is the longest button id any service takes (WhatsApp's
// 256); a pressed button's id longer than that is refused.
const MaxButtonIDBytes = 256

// The services' button limits. WhatsApp Cloud's interactive reply
// buttons: at most 3, titles of at most 20 characters, ids of at most 256.
// Telegram's inline keyboard: callback_data of 1 to 64 bytes; Switchboard
// sends at most 10 buttons, one per row, with titles of at most 64
// characters (the Bot API sets no title limit of its own).
var (
	WhatsAppButtons = ButtonRules{Max: 3, MaxTitle: 20, MaxIDBytes: MaxButtonIDBytes}
	TelegramButtons = ButtonRules{Max: 10, MaxTitle: 64, MaxIDBytes: 64}
)

// ButtonRulesOf is the button limits of service: a message of a thread on
// that service keeps to them on every provider, the sandbox included.
func ButtonRulesOf(service account.Service) ButtonRules {
	if service == account.Telegram {
		return TelegramButtons
	}
	return WhatsAppButtons
}

// Button finds the button of c with id.
func (c Content) Button(id string) (Button, bool) {
	for _, b := range c.Buttons {
		if b.ID == id {
			return b, true
		}
	}
	return Button{}, false
}

// CheckButtons applies service's rules to the buttons of c, naming each
// broken rule's field under "buttons" ("buttons[3]", "buttons[0].title").
// characters counts a title's user-perceived characters. Content.Check
// refuses buttons on anything but a text message.
//
// Errors: Invalid, with a field error per broken rule.
func CheckButtons(service account.Service, c Content, characters func(string) int) error {
	rules := ButtonRulesOf(service)
	var p failure.Problems
	add := func(typ, msg string, path ...any) { p.Add(typ, msg, append([]any{"buttons"}, path...)...) }
	if len(c.Buttons) > rules.Max {
		add("too_long", fmt.Sprintf("%s messages carry at most %d buttons", service, rules.Max), rules.Max)
	}
	seen := map[string]int{}
	for i, b := range c.Buttons {
		switch {
		case b.ID == "":
			add("string_too_short", "a button id must not be empty", i, "id")
		case len(b.ID) > rules.MaxIDBytes:
			add("string_too_long", fmt.Sprintf("a %s button id must be at most %d bytes", service, rules.MaxIDBytes), i, "id")
		case strings.TrimSpace(b.ID) != b.ID:
			add("value_error", "a button id must not start or end with spaces", i, "id")
		default:
			if first, dup := seen[b.ID]; dup {
				add("value_error", fmt.Sprintf("button ids must be unique: buttons[%d] has this id", first), i, "id")
			} else {
				seen[b.ID] = i
			}
		}
		switch n := characters(b.Title); {
		case strings.TrimSpace(b.Title) == "":
			add("string_too_short", "a button title must not be empty", i, "title")
		case n > rules.MaxTitle:
			add("string_too_long", fmt.Sprintf("a %s button title must be at most %d characters, this one has %d", service, rules.MaxTitle, n), i, "title")
		}
	}
	return p.Err()
}
