// Package openapitest is an HTTP client for tests that checks every response
// it receives against the OpenAPI document: status codes the operation does
// not declare, bodies that break their schema and missing required headers
// all fail the test. It is how the document stays the true contract.
package openapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/switchboard-dev/switchboard/adapters/edge/rest"
)

var (
	loadOnce sync.Once
	doc      *openapi3.T
	router   routers.Router
	loadErr  error
)

// mediaTypes are the file types tests stream from the media routes,
// whose bodies are checked as the binary strings they are.
var mediaTypes = []string{"image/jpeg", "image/png", "image/webp", "video/mp4", "audio/ogg", "audio/mpeg", "application/pdf"}

func load() (*openapi3.T, routers.Router, error) {
	loadOnce.Do(func() {
		for _, t := range mediaTypes {
			if openapi3filter.RegisteredBodyDecoder(t) == nil {
				openapi3filter.RegisterBodyDecoder(t, openapi3filter.FileBodyDecoder)
			}
		}
		loader := openapi3.NewLoader()
		doc, loadErr = loader.LoadFromData(rest.OpenAPIYAML)
		if loadErr != nil {
			return
		}
		if loadErr = doc.Validate(context.Background()); loadErr != nil {
			return
		}
		router, loadErr = gorillamux.NewRouter(doc)
	})
	return doc, router, loadErr
}

// Document returns the parsed and validated OpenAPI document.
func Document(t testing.TB) *openapi3.T {
	t.Helper()
	d, _, err := load()
	if err != nil {
		t.Fatalf("openapi document: %v", err)
	}
	return d
}

// Client sends requests to a running server and validates each response.
type Client struct {
	t    testing.TB
	base string
	http *http.Client
}

// New returns a client for the server at baseURL ("http://127.0.0.1:port").
func New(t testing.TB, baseURL string) *Client {
	t.Helper()
	Document(t)
	return &Client{t: t, base: strings.TrimSuffix(baseURL, "/"), http: &http.Client{}}
}

// Response is a received response with its body read.
type Response struct {
	*http.Response
	Body []byte
}

// JSON decodes the body into a generic value.
func (r Response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Fatalf("response body is not a JSON object: %v: %s", err, r.Body)
	}
	return v
}

// Do sends method path with body (a string, []byte, or a value marshalled
// as JSON; nil for none) and headers given as name, value pairs.
func (c *Client) Do(method, path string, body any, headers ...string) Response {
	c.t.Helper()
	var raw []byte
	switch b := body.(type) {
	case nil:
	case string:
		raw = []byte(b)
	case []byte:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			c.t.Fatalf("marshal request body: %v", err)
		}
	}
	var rd io.Reader
	if raw != nil {
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatalf("build request: %v", err)
	}
	if raw != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return c.Send(req)
}

// Send sends a prepared request and validates the response.
func (c *Client) Send(req *http.Request) Response {
	c.t.Helper()
	var reqBody []byte
	if req.Body != nil {
		reqBody, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("read response: %v", err)
	}
	if req.Body != nil {
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	if err := Validate(req, resp, body); err != nil {
		c.t.Errorf("%s %s → %d does not match the OpenAPI document: %v\nbody: %s", req.Method, req.URL.Path, resp.StatusCode, err, truncate(body))
	}
	if resp.Header.Get("X-Request-Id") == "" {
		c.t.Errorf("%s %s: response has no X-Request-Id", req.Method, req.URL.Path)
	}
	return Response{Response: resp, Body: body}
}

// a1CronVerbs are the third segments of the A1Cron routes' paths.
var a1CronVerbs = map[string]bool{"list": true, "create": true, "details": true, "update": true, "delete": true, "trigger": true, "logs": true}

// Validate checks one response against the document. A request that
// matches no documented path (or method) must have been answered 404 or 405
// with the documented error body.
func Validate(req *http.Request, resp *http.Response, body []byte) error {
	d, r, err := load()
	if err != nil {
		return err
	}
	route, params, err := r.FindRoute(req)
	if err != nil {
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
			return err
		}
		name := "Error"
		if rest, ok := strings.CutPrefix(req.URL.Path, "/v1/cron-jobs"); ok {
			name = "CronError"
			// /v1/cron-jobs/{accountId}/{list,create,…}: the A1Cron routes.
			if parts := strings.Split(strings.TrimPrefix(rest, "/"), "/"); len(parts) >= 2 && a1CronVerbs[parts[1]] {
				name = "A1CronError"
			}
		}
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			return err
		}
		return d.Components.Schemas[name].Value.VisitJSON(v)
	}
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		},
		Status: resp.StatusCode,
		Header: resp.Header,
		Body:   io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			MultiError:            true,
		},
	}
	return openapi3filter.ValidateResponse(context.Background(), input)
}

func truncate(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "…"
	}
	return string(b)
}
