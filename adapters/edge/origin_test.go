package edge_test

import (
	"testing"

	"github.com/switchboard-dev/switchboard/adapters/edge"
)

func TestFromOwnOrigin(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, origin, site, host string
		tls, want                bool
	}{
		{"same origin", "http://127.0.0.1:8080", "same-origin", "127.0.0.1:8080", false, true},
		{"host case", "http://Example.COM", "", "example.com", false, true},
		{"no headers", "", "", "example.com", false, true},
		{"typed URL", "", "none", "example.com", false, true},
		{"https behind a TLS proxy", "https://example.com", "same-origin", "example.com", false, true},
		{"https over TLS", "https://example.com", "", "example.com", true, true},
		{"http page over TLS", "http://example.com", "", "example.com", true, false},
		{"other host", "http://evil.example", "", "example.com", false, false},
		{"other port", "http://example.com:8081", "", "example.com:8080", false, false},
		{"suffix host", "http://example.com.evil.example", "", "example.com", false, false},
		{"cross-site fetch", "", "cross-site", "example.com", false, false},
		{"same-site fetch", "", "same-site", "example.com", false, false},
		{"cross-site says fetch, origin looks right", "http://example.com", "cross-site", "example.com", false, false},
		{"opaque origin", "null", "", "example.com", false, false},
		{"other scheme", "ftp://example.com", "", "example.com", false, false},
		{"with a path", "http://example.com/x", "", "example.com", false, false},
		{"with user info", "http://u@example.com", "", "example.com", false, false},
		{"no host", "http://example.com", "", "", false, false},
	}
	for _, c := range cases {
		if got := edge.FromOwnOrigin(c.origin, c.site, c.host, c.tls); got != c.want {
			t.Errorf("%s: FromOwnOrigin(%q, %q, %q, %v) = %v, want %v", c.name, c.origin, c.site, c.host, c.tls, got, c.want)
		}
	}
}
