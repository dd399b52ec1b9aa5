package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// apiClient sends the bench's own requests to the servers: set-up, probes and
// reads, never the measured load (see HTTPLoad).
var apiClient = &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}

// CallAPI sends one request with a JSON body (none when nil) and header, and
// decodes the JSON of a 2xx answer into out (unless out is nil). Any other answer
// is an error quoting its body.
func CallAPI(ctx context.Context, method, url string, header http.Header, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	if header != nil {
		req.Header = header.Clone()
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := apiClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, req.URL.Path, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: HTTP %d: %s", method, req.URL.Path, resp.StatusCode, bytes.TrimSpace(raw[:min(len(raw), 4<<10)]))
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("%s %s: decode the answer: %w", method, req.URL.Path, err)
		}
	}
	return nil
}

// PostJSON marshals v and posts it with CallAPI.
func PostJSON(ctx context.Context, url string, header http.Header, v, out any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return CallAPI(ctx, http.MethodPost, url, header, body, out)
}
