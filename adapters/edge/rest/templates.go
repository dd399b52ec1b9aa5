package rest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"

	"github.com/gorilla/mux"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/application/messaging"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// The message template routes: the account's templates as last synced,
// and a sync from the providers.
func (s *server) mountTemplates(api *edge.Routes) {
	api.Handle(http.MethodGet, "/templates/{accountId}", s.templateList)
	api.Handle(http.MethodPost, "/templates/{accountId}/sync", s.idempotent(s.syncTemplates))
}

// templateListBody is a list of templates.
type templateListBody struct {
	Status string         `json:"status"`
	Data   []templateItem `json:"data"`
}

// templateItem is a template as the API shows it; its components are the
// provider's (type, format, text, buttons).
type templateItem struct {
	TemplateID      string                     `json:"template_id"`
	Number          string                     `json:"number"`
	Name            string                     `json:"name"`
	Language        string                     `json:"language"`
	Status          string                     `json:"status"`
	Category        string                     `json:"category"`
	ParameterFormat string                     `json:"parameter_format"`
	Components      []domain.TemplateComponent `json:"components"`
	SyncedAt        string                     `json:"synced_at"`
}

func templateItems(ts []domain.Template) templateListBody {
	out := templateListBody{Status: "success", Data: make([]templateItem, len(ts))}
	for i, t := range ts {
		components := t.Components
		if components == nil {
			components = []domain.TemplateComponent{}
		}
		out.Data[i] = templateItem{TemplateID: t.ProviderID, Number: t.Number, Name: t.Name, Language: t.Language, Status: t.Status,
			Category: t.Category, ParameterFormat: t.ParameterFormat, Components: components, SyncedAt: timestamp(t.SyncedAt)}
	}
	return out
}

func (s *server) templateList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	list, err := s.messaging.Templates(r.Context(), messaging.TemplateFilter{AccountID: mux.Vars(r)["accountId"],
		Number: q.Get("number"), Name: q.Get("name"), Language: q.Get("language"), Status: q.Get("status")})
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, templateItems(list))
}

func (s *server) syncTemplates(w http.ResponseWriter, r *http.Request) {
	list, err := s.messaging.SyncTemplates(r.Context(), mux.Vars(r)["accountId"], r.URL.Query().Get("number"))
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, templateItems(list))
}

// The types a template's language and index decode to, for their errors.
var (
	reflectString = reflect.TypeFor[string]()
	reflectInt    = reflect.TypeFor[int]()
)

// templateBody is the template of a send, in the Cloud API's shape:
// name, language (a code, or {"code": …}), and components giving the
// parameters of the header, body and buttons.
type templateBody struct {
	Name       string              `json:"name"`
	Language   templateLanguage    `json:"language"`
	Components []templateComponent `json:"components"`
}

// UnmarshalJSON decodes the template object strictly, so that an unknown
// field inside it is reported at ["body", "template", …].
func (t *templateBody) UnmarshalJSON(data []byte) error {
	type plain templateBody
	v, err := decodeNested[plain](data, "template")
	*t = templateBody(v)
	return err
}

// templateLanguage is a language code, given as "en_US" or, as the Cloud
// API writes it, {"code": "en_US"} (with an optional policy).
type templateLanguage string

func (l *templateLanguage) UnmarshalJSON(data []byte) error {
	var code string
	if err := json.Unmarshal(data, &code); err == nil {
		*l = templateLanguage(code)
		return nil
	}
	var obj struct {
		Code   string `json:"code"`
		Policy string `json:"policy"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&obj); err != nil {
		return &json.UnmarshalTypeError{Value: "language", Type: reflectString, Field: "language"}
	}
	*l = templateLanguage(obj.Code)
	return nil
}

// templateComponent gives the parameters of one component; a button's
// index may be a number or, as the Cloud API writes it, a string.
type templateComponent struct {
	Type       string                     `json:"type"`
	SubType    string                     `json:"sub_type"`
	Index      templateIndex              `json:"index"`
	Parameters []domain.TemplateParameter `json:"parameters"`
}

// templateIndex is a button's index, 0 or "0".
type templateIndex int

func (i *templateIndex) UnmarshalJSON(data []byte) error {
	var n int
	if err := json.Unmarshal(data, &n); err == nil {
		*i = templateIndex(n)
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return &json.UnmarshalTypeError{Value: string(data), Type: reflectInt, Field: "index"}
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return &json.UnmarshalTypeError{Value: s, Type: reflectInt, Field: "index"}
	}
	*i = templateIndex(n)
	return nil
}

// send is the template send the body describes.
func (t templateBody) send() *domain.TemplateSend {
	out := &domain.TemplateSend{Name: t.Name, Language: string(t.Language)}
	for _, c := range t.Components {
		out.Components = append(out.Components, domain.TemplateSendComponent{Type: c.Type, SubType: c.SubType, Index: int(c.Index), Parameters: c.Parameters})
	}
	return out
}
