package rest

import (
	"reflect"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// A fast path for the request bodies clients send nearly always.
//
// encoding/json reads a body twice (once to find where the value ends,
// once to decode it), a byte at a time through its scanner's state
// machine, and allocates for every pointer field; for a send that was a
// tenth of the server's CPU. Most bodies are one flat object of plain
// strings, which one pass can read. decodeFast reads exactly those: an
// object whose members are named as the DTO's fields (exactly, no case
// folding), each once, with string values of valid UTF-8 that hold no
// control character and no escape that encoding/json would have to repair
// (a lone UTF-16 surrogate), and, for map fields, objects of such strings and lists
// of them. For anything else it reports false and
// decodeJSON decodes the body with encoding/json, which also words every
// error; what decodeFast accepts, it decodes exactly as encoding/json
// would (FuzzDecodeFast checks that).

// fastKind is a DTO field type the fast path fills.
type fastKind uint8

const (
	fastStringPtr fastKind = iota + 1 // *string
	fastStringMap                     // map[string]any of strings and lists of strings
)

type fastField struct {
	index int
	kind  fastKind
}

// fastPlans keeps, per DTO type, its fields by JSON name; a field of a type
// the fast path does not fill is left out, so a body naming it falls back.
var fastPlans sync.Map // reflect.Type → map[string]fastField

var (
	stringPtrType = reflect.TypeFor[*string]()
	anyMapType    = reflect.TypeFor[map[string]any]()
)

func fastPlanFor(t reflect.Type) map[string]fastField {
	if p, ok := fastPlans.Load(t); ok {
		return p.(map[string]fastField)
	}
	plan := map[string]fastField{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || f.Anonymous || name == "" || name == "-" || (opts != "" && opts != "omitempty") || i >= 64 {
			continue
		}
		switch f.Type {
		case stringPtrType:
			plan[name] = fastField{index: i, kind: fastStringPtr}
		case anyMapType:
			plan[name] = fastField{index: i, kind: fastStringMap}
		}
	}
	p, _ := fastPlans.LoadOrStore(t, plan)
	return p.(map[string]fastField)
}

// decodeFast fills dst, a pointer to a DTO struct, from raw and reports
// true when raw has the shape described above; otherwise it reports false
// and leaves dst as it was.
func decodeFast(raw []byte, dst any) bool {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return false
	}
	plan := fastPlanFor(v.Elem().Type())
	if len(plan) == 0 {
		return false
	}
	type assignment struct {
		field fastField
		value any // string or map[string]any
	}
	var (
		values [16]assignment
		set    = values[:0]
		seen   uint64
	)
	p := fastParser{b: raw}
	p.space()
	if !p.take('{') {
		return false
	}
	p.space()
	if !p.take('}') {
		for {
			key, ok := p.plainBytes()
			if !ok {
				return false
			}
			f, known := plan[string(key)]
			if !known || seen&(1<<f.index) != 0 {
				return false
			}
			seen |= 1 << f.index
			if !p.colon() {
				return false
			}
			var value any
			switch f.kind {
			case fastStringPtr:
				value, ok = p.plainString()
			case fastStringMap:
				value, ok = p.stringMap()
			}
			if !ok {
				return false
			}
			set = append(set, assignment{field: f, value: value})
			if more, ok := p.after('}'); !ok {
				return false
			} else if !more {
				break
			}
		}
	}
	p.space()
	if p.i != len(p.b) {
		return false
	}
	s := v.Elem()
	for _, a := range set {
		switch a.field.kind {
		case fastStringPtr:
			str := a.value.(string)
			s.Field(a.field.index).Set(reflect.ValueOf(&str))
		case fastStringMap:
			s.Field(a.field.index).Set(reflect.ValueOf(a.value))
		}
	}
	return true
}

// fastParser reads JSON from b at i.
type fastParser struct {
	b []byte
	i int
}

// space skips JSON whitespace.
func (p *fastParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// take consumes c if it comes next.
func (p *fastParser) take(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// plainBytes reads a string of valid UTF-8 without control characters or
// escapes (a member's name), returning its bytes inside b.
func (p *fastParser) plainBytes() ([]byte, bool) {
	return p.stringBytes(false)
}

// plainString reads a string as plainBytes does, but for escapes: those of
// one character (\" \\ \/ \b \f \n \r \t: a body with line breaks) and
// \uXXXX (see unicodeEscape).
func (p *fastParser) plainString() (string, bool) {
	b, ok := p.stringBytes(true)
	return string(b), ok
}

func (p *fastParser) stringBytes(escapes bool) ([]byte, bool) {
	if !p.take('"') {
		return nil, false
	}
	start, ascii := p.i, true
	var unescaped []byte // nil until the first escape
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := p.b[start:p.i]
			p.i++
			if unescaped != nil {
				s = append(unescaped, s...)
			}
			return s, ascii || utf8.Valid(s)
		case c == '\\':
			if !escapes || p.i+1 == len(p.b) {
				return nil, false
			}
			unescaped = append(unescaped, p.b[start:p.i]...)
			if p.b[p.i+1] == 'u' {
				r, n := p.unicodeEscape()
				if n == 0 {
					return nil, false
				}
				unescaped = utf8.AppendRune(unescaped, r)
				p.i += n
			} else {
				e, ok := oneCharEscapes[p.b[p.i+1]]
				if !ok {
					return nil, false
				}
				unescaped = append(unescaped, e)
				p.i += 2
			}
			start = p.i
			continue
		case c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		p.i++
	}
	return nil, false
}

// unicodeEscape reads the \uXXXX escape at p.i, or the pair of them that
// spells a character beyond the Basic Multilingual Plane as UTF-16
// surrogates, and returns the character and the bytes read. It returns 0
// bytes for a malformed escape and for a surrogate without its partner,
// which encoding/json turns into U+FFFD: those bodies take the slow path.
//
// Clients escape more than one might think: Python's json.dumps writes
// every non-ASCII character as \uXXXX by default, and Go's json.Marshal
// writes <, > and & that way, so an HTML email from a Go client has them.
func (p *fastParser) unicodeEscape() (rune, int) {
	r := hex4(p.b[p.i+2:])
	switch {
	case r < 0:
		return 0, 0
	case !utf16.IsSurrogate(r):
		return r, 6
	}
	rest := p.b[p.i+6:]
	if len(rest) < 6 || rest[0] != '\\' || rest[1] != 'u' {
		return 0, 0
	}
	if r = utf16.DecodeRune(r, hex4(rest[2:])); r == utf8.RuneError {
		return 0, 0
	}
	return r, 12
}

// hex4 is the value of the four hex digits b starts with, or -1.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// oneCharEscapes are JSON's escapes of one character, by the letter after
// the backslash.
var oneCharEscapes = map[byte]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// stringMap reads an object whose values are plain strings or lists of
// them, as encoding/json decodes it into map[string]any.
func (p *fastParser) stringMap() (map[string]any, bool) {
	if !p.take('{') {
		return nil, false
	}
	m := map[string]any{}
	p.space()
	if p.take('}') {
		return m, true
	}
	for {
		key, ok := p.plainString()
		if _, dup := m[key]; !ok || dup || !p.colon() {
			return nil, false
		}
		if p.take('[') {
			list := make([]any, 0, 2)
			p.space()
			for more := !p.take(']'); more; {
				s, ok := p.plainString()
				if !ok {
					return nil, false
				}
				list = append(list, s)
				if more, ok = p.after(']'); !ok {
					return nil, false
				}
			}
			m[key] = list
		} else {
			s, ok := p.plainString()
			if !ok {
				return nil, false
			}
			m[key] = s
		}
		if more, ok := p.after('}'); !ok {
			return nil, false
		} else if !more {
			return m, true
		}
	}
}

// colon reads the colon between a member's name and its value.
func (p *fastParser) colon() bool {
	p.space()
	ok := p.take(':')
	p.space()
	return ok
}

// after reads what follows a member or an element: a comma when more
// follow, or end when the object or list ends.
func (p *fastParser) after(end byte) (more, ok bool) {
	p.space()
	if p.take(',') {
		p.space()
		return true, true
	}
	return false, p.take(end)
}
