package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Methods whose refusal for the rate limit is the call's own answer (a
// tool error, a resource error) rather than an HTTP status; see
// ServeHTTP.
const (
	methodCallTool     = "tools/call"
	methodReadResource = "resources/read"
)

// isCall reports whether msg is a request answered rate_limited by the
// call itself: a tools/call or resources/read with an id.
func isCall(msg jsonrpc.Message) bool {
	req, ok := msg.(*jsonrpc.Request)
	return ok && req.IsCall() && (req.Method == methodCallTool || req.Method == methodReadResource)
}

// readMessage reads a POST's body, at most maxBytes of it, and decodes
// it as one JSON-RPC message. It answers the request itself and returns
// false when the body is too large, a batch (a JSON array: one HTTP
// request is one unit of work, whatever MCP-Protocol-Version says), or
// not a JSON-RPC message; the SDK then never sees it. Otherwise r's body
// is replaced by the bytes read, for the SDK to read again.
func readMessage(w http.ResponseWriter, r *http.Request, maxBytes int64) (jsonrpc.Message, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBytes))
	if err != nil {
		if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
			writeError(w, http.StatusRequestEntityTooLarge, "payload_too_large", "request body is larger than "+strconv.FormatInt(maxBytes, 10)+" bytes")
			return nil, false
		}
		writeError(w, http.StatusBadRequest, "bad_request", "the request body could not be read")
		return nil, false
	}
	if first, err := json.NewDecoder(bytes.NewReader(body)).Token(); err == nil && first == json.Delim('[') {
		writeRPCError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not accepted: send one message per request")
		return nil, false
	}
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		writeRPCError(w, http.StatusBadRequest, jsonrpc.CodeParseError, "the body is not a JSON-RPC message: "+truncate(err.Error(), 200))
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return msg, true
}

// rpcErrorBody is a JSON-RPC error answer to a message whose id is not
// known (or not read): its id is null.
type rpcErrorBody struct {
	JSONRPC string         `json:"jsonrpc"`
	ID      any            `json:"id"`
	Error   *jsonrpc.Error `json:"error"`
}

// writeRPCError answers with a JSON-RPC error of id null, as the
// Streamable HTTP transport answers what it refuses before reading a
// message's id.
func writeRPCError(w http.ResponseWriter, status int, code int64, message string) {
	body, _ := json.Marshal(rpcErrorBody{JSONRPC: "2.0", Error: &jsonrpc.Error{Code: code, Message: message}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// originAllowed reports whether r may be served for its Origin header:
// a request without one (an MCP client that is not a browser) may; one
// with an Origin must name an origin of allowed (as a browser serializes
// it, compared without regard to case). The transport's specification
// requires this check against web pages that reach a server they should
// not (DNS rebinding).
func originAllowed(r *http.Request, allowed []string) bool {
	origins := r.Header.Values("Origin")
	if len(origins) == 0 {
		return true
	}
	if len(origins) > 1 {
		return false
	}
	return slices.ContainsFunc(allowed, func(a string) bool { return strings.EqualFold(a, origins[0]) })
}

// hostAllowed reports whether r's Host header may be served on the
// connection r came in. On a connection to a loopback address, whether
// the server listens on loopback or on every address, the Host must be a
// loopback name or address (localhost, 127.0.0.1, [::1], any port) or
// one of allowedHosts: a web page that rebinds its own name to 127.0.0.1
// sends that name. Other connections may name any host.
func hostAllowed(r *http.Request, allowedHosts []string) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil || !isLoopback(local.String()) {
		return true
	}
	if isLoopback(r.Host) {
		return true
	}
	name := hostname(r.Host)
	return slices.ContainsFunc(allowedHosts, func(a string) bool { return strings.EqualFold(a, name) })
}

// hostname is the name or address of a host[:port], without the port or
// an IPv6 address's brackets.
func hostname(hostport string) string {
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		return host
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}

// isLoopback reports whether a host[:port] names the loopback interface:
// localhost, or an address of 127.0.0.0/8 or ::1.
func isLoopback(hostport string) bool {
	host := hostname(hostport)
	if strings.EqualFold(host, "localhost") {
		return true
	}
	addr, err := netip.ParseAddr(host)
	return err == nil && addr.Unmap().IsLoopback()
}
