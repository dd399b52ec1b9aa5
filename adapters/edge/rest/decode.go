package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"

	fastjson "github.com/segmentio/encoding/json"

	"github.com/switchboard-dev/switchboard/domain/failure"
)

// decodeJSON reads the request body into dst (a pointer to a DTO struct),
// strictly: the body must be one JSON object whose fields exist in the DTO
// and have the right JSON types. Every problem becomes a validation failure
// naming the field, or 413 when the body is over the limit; nothing else
// reaches the handler.
func decodeJSON(r *http.Request, dst any) error {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return decodeBodyError(err)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return failure.Invalid(failure.FieldError{In: "body", Message: "Field required", Type: "missing"})
	}
	// segmentio's decoder, which decodes as encoding/json does at a
	// fraction of its CPU, takes what decodes; anything it refuses is
	// decoded again from scratch by encoding/json, whose errors the
	// answer words.
	if rest, err := fastjson.Parse(raw, dst, fastjson.DisallowUnknownFields); err == nil && len(bytes.TrimSpace(rest)) == 0 {
		return nil
	}
	reflect.ValueOf(dst).Elem().SetZero()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeFailure(err)
	}
	if dec.More() {
		return failure.Invalid(failure.FieldError{In: "body", Message: "JSON decode error: extra data after the object", Type: "json_invalid"})
	}
	return nil
}

// decodeBodyError explains a body that could not be read.
func decodeBodyError(err error) error {
	var maxErr *http.MaxBytesError
	if errors.As(err, &maxErr) {
		return &failure.Error{Kind: failure.KindTooLarge, Code: "payload_too_large",
			Message: fmt.Sprintf("request body is larger than %d bytes", maxErr.Limit)}
	}
	return failure.Invalid(failure.FieldError{In: "body", Message: "request body could not be read", Type: "json_invalid"})
}

// nestedError carries a decoding error from inside a nested object that
// decodes itself strictly, so its location keeps the parent's name.
type nestedError struct {
	field string
	err   error
}

func (e *nestedError) Error() string { return e.field + ": " + e.err.Error() }

// decodeNested decodes the nested object data strictly (no unknown
// fields), as a T; an error inside it is reported under field.
func decodeNested[T any](data []byte, field string) (T, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var v T
	if err := dec.Decode(&v); err != nil {
		return v, &nestedError{field: field, err: err}
	}
	return v, nil
}

// decodeFailure names what encoding/json refused in pydantic's vocabulary,
// which the existing clients' error handling expects.
func decodeFailure(err error) error {
	var nested *nestedError
	if errors.As(err, &nested) {
		inner := failure.As(decodeFailure(nested.err))
		for i := range inner.Fields {
			inner.Fields[i].Path = append([]any{nested.field}, inner.Fields[i].Path...)
		}
		return inner
	}
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntaxErr):
		return failure.Invalid(failure.FieldError{In: "body", Path: []any{int(syntaxErr.Offset)},
			Message: "JSON decode error: " + syntaxErr.Error(), Type: "json_invalid"})
	case errors.Is(err, io.ErrUnexpectedEOF):
		return failure.Invalid(failure.FieldError{In: "body", Message: "JSON decode error: unexpected end of input", Type: "json_invalid"})
	case errors.As(err, &typeErr):
		var path []any
		if typeErr.Field != "" {
			for _, p := range strings.Split(typeErr.Field, ".") {
				path = append(path, p)
			}
		}
		typ, msg := expectedType(typeErr.Type)
		if len(path) == 0 {
			typ, msg = "model_attributes_type", "Input should be a valid dictionary or object"
		}
		return failure.Invalid(failure.FieldError{In: "body", Path: path, Message: msg, Type: typ})
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return failure.Invalid(failure.FieldError{In: "body", Path: []any{name}, Message: "Extra inputs are not permitted", Type: "extra_forbidden"})
	}
	return failure.Invalid(failure.FieldError{In: "body", Message: "JSON decode error: " + err.Error(), Type: "json_invalid"})
}

func expectedType(t reflect.Type) (typ, msg string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "string_type", "Input should be a valid string"
	case reflect.Bool:
		return "bool_type", "Input should be a valid boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "int_type", "Input should be a valid integer"
	case reflect.Float32, reflect.Float64:
		return "float_type", "Input should be a valid number"
	case reflect.Slice, reflect.Array:
		return "list_type", "Input should be a valid list"
	case reflect.Map, reflect.Struct:
		return "dict_type", "Input should be a valid dictionary"
	}
	return "value_error", "Input has the wrong type"
}

// required records a missing field when v is nil.
func required[T any](p *failure.Problems, v *T, field string) {
	if v == nil {
		p.Add("missing", "Field required", field)
	}
}
