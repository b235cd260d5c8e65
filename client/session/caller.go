package session

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Caller makes JSON calls to one deployment's HTTP APIs. It keeps no
// state beyond its configuration and is safe for concurrent use.
type Caller struct {
	// immutable after NewCaller
	base string
	cfg  Config
}

// NewCaller returns a Caller for the API at baseURL, such as
// "https://api.example.com". cfg may be nil for the defaults.
func NewCaller(baseURL string, cfg *Config) (*Caller, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("base URL %q: want http(s)://host", baseURL)
	}
	return &Caller{base: strings.TrimRight(baseURL, "/"), cfg: cfg.resolve()}, nil
}

// Do makes one call: body (nil for none) is sent as JSON, with
// "Authorization: Bearer <bearer>" unless bearer is empty, and a 2xx
// answer is decoded into out (nil to ignore it). It returns the status of
// a success. An answer outside 2xx is an [*APIError]; other errors name
// the call and say what failed.
func (c *Caller) Do(ctx context.Context, method, path, bearer string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, fmt.Errorf("%s %s: encode the request: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return 0, err // a *url.Error: it names the call
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxResponseBytes+1))
	if err != nil {
		return 0, fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	if int64(len(data)) > c.cfg.MaxResponseBytes {
		return 0, fmt.Errorf("%s %s: answer over %d bytes", method, path, c.cfg.MaxResponseBytes)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := ParseAPIError(resp.StatusCode, data)
		e.Method, e.Path = method, path
		return 0, e
	}
	if out == nil || len(bytes.TrimSpace(data)) == 0 {
		return resp.StatusCode, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return 0, fmt.Errorf("%s %s: decode the answer: %w", method, path, err)
	}
	return resp.StatusCode, nil
}
