package messaging

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/domain/failure"
)

// KindTemplate is a message template (WhatsApp's), sent by name and
// language with its parameters (Content.Template); Content.Text is the
// template's body with them filled in. Templates may be sent after the
// customer service window closed.
const KindTemplate Kind = "template"

// TemplateApproved is the status of a template the provider lets an agent
// send. Others (PENDING, REJECTED, PAUSED, DISABLED, ...) are shown as the
// provider names them and refused by sends.
const TemplateApproved = "APPROVED"

// The parameter formats of templates: variables written {{1}}, {{2}}, ...
// (positional), or {{first_name}} (named).
const (
	ParametersPositional = "POSITIONAL"
	ParametersNamed      = "NAMED"
)

// Template is a message template of an agent number, as its provider
// (the WhatsApp Business Account) keeps it: a name and language, its
// review status and category, and its components, whose texts hold
// variables ({{1}}, or {{name}}) that a send fills with parameters.
type Template struct {
	AccountID string
	// NumberID and Number are the agent number whose provider has it.
	NumberID string
	Number   string
	// ProviderID is the provider's id of the template.
	ProviderID      string
	Name            string
	Language        string
	Status          string
	Category        string
	ParameterFormat string
	Components      []TemplateComponent
	SyncedAt        time.Time
}

// TemplateComponent is one part of a template: a HEADER (Format TEXT,
// IMAGE, VIDEO, DOCUMENT or LOCATION), the BODY, a FOOTER, or its BUTTONS.
type TemplateComponent struct {
	Type    string           `json:"type"`
	Format  string           `json:"format,omitempty"`
	Text    string           `json:"text,omitempty"`
	Buttons []TemplateButton `json:"buttons,omitempty"`
}

// TemplateButton is a button of a template: QUICK_REPLY, URL (its URL
// may end in a variable), PHONE_NUMBER, COPY_CODE, or another type the
// provider offers.
type TemplateButton struct {
	Type        string `json:"type"`
	Text        string `json:"text,omitempty"`
	URL         string `json:"url,omitempty"`
	PhoneNumber string `json:"phone_number,omitempty"`
}

// TemplateSend is a send of a template: its name and language, and the
// parameters of its header, body and buttons, in the Cloud API's shape.
type TemplateSend struct {
	Name       string                  `json:"name"`
	Language   string                  `json:"language"`
	Components []TemplateSendComponent `json:"components,omitempty"`
}

// TemplateSendComponent gives the parameters of one component of the
// template: type header, body or button; a button's SubType (url,
// quick_reply, copy_code) and Index (its position among the template's
// buttons, from 0).
type TemplateSendComponent struct {
	Type       string              `json:"type"`
	SubType    string              `json:"sub_type,omitempty"`
	Index      int                 `json:"index,omitempty"`
	Parameters []TemplateParameter `json:"parameters"`
}

// TemplateParameter is the value of one variable: Type text (Text),
// currency, date_time, image, video, document (a link), location, payload
// (a quick reply's) or coupon_code. Name is the variable's name in a
// template with named parameters.
type TemplateParameter struct {
	Type       string            `json:"type"`
	Name       string            `json:"parameter_name,omitempty"`
	Text       string            `json:"text,omitempty"`
	Currency   *TemplateCurrency `json:"currency,omitempty"`
	DateTime   *TemplateDateTime `json:"date_time,omitempty"`
	Image      *TemplateMedia    `json:"image,omitempty"`
	Video      *TemplateMedia    `json:"video,omitempty"`
	Document   *TemplateMedia    `json:"document,omitempty"`
	Location   *TemplateLocation `json:"location,omitempty"`
	Payload    string            `json:"payload,omitempty"`
	CouponCode string            `json:"coupon_code,omitempty"`
}

// TemplateCurrency is an amount: shown as FallbackValue; Amount1000 is
// the amount times 1000 in the ISO 4217 currency Code.
type TemplateCurrency struct {
	FallbackValue string `json:"fallback_value"`
	Code          string `json:"code"`
	Amount1000    int64  `json:"amount_1000"`
}

// TemplateDateTime is a date and time, shown as FallbackValue.
type TemplateDateTime struct {
	FallbackValue string `json:"fallback_value"`
}

// TemplateMedia is the file of a media header: a public URL, and a
// document's file name.
type TemplateMedia struct {
	Link     string `json:"link"`
	Filename string `json:"filename,omitempty"`
}

// TemplateLocation is the place of a location header.
type TemplateLocation struct {
	Latitude  float64 `json:"latitude"`
	Longitude float64 `json:"longitude"`
	Name      string  `json:"name,omitempty"`
	Address   string  `json:"address,omitempty"`
}

// variable is a template variable: {{1}} or {{name}}.
var variable = regexp.MustCompile(`\{\{\s*([A-Za-z0-9_]+)\s*\}\}`)

// Variables are the names of the variables of a template text, each
// once, in order: positional ones by number ("1", "2"), named ones in
// the order they first appear.
func Variables(text string) []string {
	var names []string
	for _, m := range variable.FindAllStringSubmatch(text, -1) {
		if !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	slices.SortStableFunc(names, func(a, b string) int {
		na, errA := strconv.Atoi(a)
		nb, errB := strconv.Atoi(b)
		if errA != nil || errB != nil {
			return 0
		}
		return na - nb
	})
	return names
}

// component is the template's component of type typ (HEADER, BODY, ...).
func (t Template) component(typ string) (TemplateComponent, bool) {
	for _, c := range t.Components {
		if strings.EqualFold(c.Type, typ) {
			return c, true
		}
	}
	return TemplateComponent{}, false
}

// mediaFormats are the header formats whose parameter is a file or place,
// by the parameter type that fills them.
var mediaFormats = map[string]string{"IMAGE": "image", "VIDEO": "video", "DOCUMENT": "document", "LOCATION": "location"}

// slot is what one component of a template takes: the parameter types it
// accepts and the variables it fills (one unnamed value for a media
// header, a URL button and a code); optional slots may be left out.
type slot struct {
	typ, subType string
	index        int
	accepts      []string
	variables    []string
	optional     bool
}

// slots are what the template's header, body and buttons take.
func (t Template) slots() []slot {
	var out []slot
	if h, ok := t.component("HEADER"); ok {
		if p, media := mediaFormats[strings.ToUpper(h.Format)]; media {
			out = append(out, slot{typ: "header", accepts: []string{p}, variables: []string{""}})
		} else if vars := Variables(h.Text); len(vars) > 0 {
			out = append(out, slot{typ: "header", accepts: []string{"text"}, variables: vars})
		}
	}
	if b, ok := t.component("BODY"); ok {
		if vars := Variables(b.Text); len(vars) > 0 {
			out = append(out, slot{typ: "body", accepts: []string{"text", "currency", "date_time"}, variables: vars})
		}
	}
	if bs, ok := t.component("BUTTONS"); ok {
		for i, b := range bs.Buttons {
			switch strings.ToUpper(b.Type) {
			case "URL":
				if vars := Variables(b.URL); len(vars) > 0 {
					out = append(out, slot{typ: "button", subType: "url", index: i, accepts: []string{"text"}, variables: []string{""}})
				}
			case "COPY_CODE":
				out = append(out, slot{typ: "button", subType: "copy_code", index: i, accepts: []string{"coupon_code"}, variables: []string{""}})
			case "QUICK_REPLY":
				out = append(out, slot{typ: "button", subType: "quick_reply", index: i, accepts: []string{"payload"}, variables: []string{""}, optional: true})
			}
		}
	}
	return out
}

func (s slot) name() string {
	if s.typ == "button" {
		return fmt.Sprintf("button %d (%s)", s.index, s.subType)
	}
	return s.typ
}

// CheckSend checks a send of t: t is approved, and the send gives each
// variable of its header, body and buttons a value of a type that fits,
// and nothing more. Field paths start with base (["template"]).
func (t Template) CheckSend(send TemplateSend, base ...any) error {
	at := func(path ...any) []any { return append(append([]any{}, base...), path...) }
	if t.Status != TemplateApproved {
		return failure.Invalid(failure.Field("template_not_approved",
			fmt.Sprintf("template %s (%s) is %s: only APPROVED templates may be sent", t.Name, t.Language, t.Status), at("name")...))
	}
	var p failure.Problems
	slots := t.slots()
	used := make([]bool, len(slots))
	for i, c := range send.Components {
		j := slices.IndexFunc(slots, func(s slot) bool {
			return strings.EqualFold(s.typ, c.Type) && (s.typ != "button" || (s.index == c.Index && strings.EqualFold(s.subType, c.SubType)))
		})
		switch {
		case j < 0:
			p.Add("extra_forbidden", fmt.Sprintf("template %s has no %s that takes parameters", t.Name, describeComponent(c)), at("components", i)...)
			continue
		case used[j]:
			p.Add("value_error", fmt.Sprintf("the parameters of the %s are given twice", slots[j].name()), at("components", i)...)
			continue
		}
		used[j] = true
		slots[j].check(t, c, &p, at("components", i))
	}
	for j, s := range slots {
		if !used[j] && !s.optional {
			p.Add("missing", fmt.Sprintf("template %s needs the parameters of its %s: %s", t.Name, s.name(), s.want(t)), at("components")...)
		}
	}
	return p.Err()
}

// describeComponent names a component of a send as its author wrote it.
func describeComponent(c TemplateSendComponent) string {
	if strings.EqualFold(c.Type, "button") {
		return fmt.Sprintf("button %d of sub_type %q", c.Index, c.SubType)
	}
	return fmt.Sprintf("%q component", c.Type)
}

// want says what a slot takes.
func (s slot) want(t Template) string {
	if s.variables[0] == "" {
		return "one " + strings.Join(s.accepts, " or ") + " parameter"
	}
	vars := make([]string, len(s.variables))
	for i, v := range s.variables {
		vars[i] = "{{" + v + "}}"
	}
	return fmt.Sprintf("%d parameters (%s)", len(vars), strings.Join(vars, ", "))
}

// check checks the parameters c gives the slot.
func (s slot) check(t Template, c TemplateSendComponent, p *failure.Problems, at []any) {
	params := append(at, "parameters")
	named := t.ParameterFormat == ParametersNamed && s.variables[0] != ""
	if len(c.Parameters) < len(s.variables) {
		p.Add("missing", fmt.Sprintf("the %s of template %s takes %s; %d given", s.name(), t.Name, s.want(t), len(c.Parameters)), params...)
	}
	for k, param := range c.Parameters {
		here := append(append([]any{}, params...), k)
		if k >= len(s.variables) {
			p.Add("extra_forbidden", fmt.Sprintf("the %s of template %s takes %s; this one is extra", s.name(), t.Name, s.want(t)), here...)
			continue
		}
		if !slices.Contains(s.accepts, param.Type) {
			p.Add("enum", fmt.Sprintf("a parameter of the %s must be of type %s", s.name(), strings.Join(s.accepts, " or ")), append(here, "type")...)
			continue
		}
		switch {
		case named && param.Name != s.variables[k]:
			p.Add("value_error", fmt.Sprintf("parameter %d of the %s is {{%s}}: give parameter_name %q", k, s.name(), s.variables[k], s.variables[k]), append(here, "parameter_name")...)
		case !named && param.Name != "":
			p.Add("extra_forbidden", fmt.Sprintf("template %s has positional parameters: parameter_name is not taken", t.Name), append(here, "parameter_name")...)
		}
		if field, msg := param.problem(); msg != "" {
			p.Add("value_error", msg, append(here, field)...)
		}
	}
}

// maxParameterText bounds a text parameter (the Cloud API takes 32768
// characters in a body, far fewer in a header: that limit is its to say).
const maxParameterText = 32768

// problem is what is wrong with a parameter's value of its type: the
// field and why, or an empty message.
func (param TemplateParameter) problem() (string, string) {
	switch param.Type {
	case "text":
		if strings.TrimSpace(param.Text) == "" {
			return "text", "a text parameter must not be empty"
		}
		if utf8.RuneCountInString(param.Text) > maxParameterText {
			return "text", fmt.Sprintf("a text parameter must be at most %d characters", maxParameterText)
		}
	case "currency":
		if param.Currency == nil || param.Currency.FallbackValue == "" || len(param.Currency.Code) != 3 {
			return "currency", "a currency parameter needs fallback_value, a three-letter code and amount_1000"
		}
	case "date_time":
		if param.DateTime == nil || param.DateTime.FallbackValue == "" {
			return "date_time", "a date_time parameter needs fallback_value"
		}
	case "image", "video", "document":
		m := map[string]*TemplateMedia{"image": param.Image, "video": param.Video, "document": param.Document}[param.Type]
		if m == nil {
			return param.Type, "a " + param.Type + " parameter needs its link"
		}
		if err := CheckMediaURL(m.Link); err != nil {
			return param.Type, err.Error()
		}
	case "location":
		if l := param.Location; l == nil || l.Latitude < -90 || l.Latitude > 90 || l.Longitude < -180 || l.Longitude > 180 {
			return "location", "a location parameter needs a latitude (-90 to 90) and a longitude (-180 to 180)"
		}
	case "payload":
		if param.Payload == "" {
			return "payload", "a payload parameter must not be empty"
		}
	case "coupon_code":
		if param.CouponCode == "" || utf8.RuneCountInString(param.CouponCode) > 15 {
			return "coupon_code", "a coupon_code parameter must be 1 to 15 characters"
		}
	}
	return "", ""
}

// Rendered is the text a send of t shows the user: the body with its
// variables filled (a currency or date by its fallback value), header
// and footer text around it. It is what a template message stores as its
// text.
func (t Template) Rendered(send TemplateSend) string {
	values := func(typ string) map[string]string {
		out := map[string]string{}
		for _, c := range send.Components {
			if !strings.EqualFold(c.Type, typ) {
				continue
			}
			vars := []string(nil)
			if comp, ok := t.component(typ); ok {
				vars = Variables(comp.Text)
			}
			for k, param := range c.Parameters {
				if k < len(vars) {
					out[vars[k]] = param.shown()
				}
			}
		}
		return out
	}
	fill := func(text string, vals map[string]string) string {
		return variable.ReplaceAllStringFunc(text, func(v string) string {
			if val, ok := vals[variable.FindStringSubmatch(v)[1]]; ok {
				return val
			}
			return v
		})
	}
	var parts []string
	if h, ok := t.component("HEADER"); ok && h.Text != "" {
		parts = append(parts, fill(h.Text, values("header")))
	}
	if b, ok := t.component("BODY"); ok {
		parts = append(parts, fill(b.Text, values("body")))
	}
	if f, ok := t.component("FOOTER"); ok && f.Text != "" {
		parts = append(parts, f.Text)
	}
	return strings.Join(parts, "\n\n")
}

// shown is how a parameter reads in the text.
func (param TemplateParameter) shown() string {
	switch {
	case param.Type == "currency" && param.Currency != nil:
		return param.Currency.FallbackValue
	case param.Type == "date_time" && param.DateTime != nil:
		return param.DateTime.FallbackValue
	}
	return param.Text
}

// CheckTemplateSend checks the form of a template send before its
// template is looked up: a name, a language, components of a known type.
func CheckTemplateSend(send TemplateSend, base ...any) error {
	at := func(path ...any) []any { return append(append([]any{}, base...), path...) }
	var p failure.Problems
	if strings.TrimSpace(send.Name) == "" {
		p.Add("missing", "Field required: the template's name", at("name")...)
	}
	if strings.TrimSpace(send.Language) == "" {
		p.Add("missing", "Field required: the template's language code, e.g. en_US", at("language")...)
	}
	for i, c := range send.Components {
		switch strings.ToLower(c.Type) {
		case "header", "body":
			if c.SubType != "" {
				p.Add("extra_forbidden", "sub_type belongs to button components", at("components", i, "sub_type")...)
			}
		case "button":
			if c.SubType == "" {
				p.Add("missing", "Field required: a button's sub_type (url, quick_reply or copy_code)", at("components", i, "sub_type")...)
			}
			if c.Index < 0 || c.Index > 9 {
				p.Add("value_error", "a button's index is its position, 0 to 9", at("components", i, "index")...)
			}
		default:
			p.Add("enum", "a component's type must be header, body or button", at("components", i, "type")...)
		}
	}
	return p.Err()
}
