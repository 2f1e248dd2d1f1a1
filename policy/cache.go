package policy

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"os"
	"path/filepath"
)

// Cache is an HTTP transport that keeps each response in Dir, by its request's method,
// URL and body: a replay asks an llm supervisor's model each past request once, and a
// second replay of the same requests calls no model. Base makes the calls (nil:
// http.DefaultTransport).
type Cache struct {
	Dir  string
	Base http.RoundTripper
	// Hits and Misses count the responses read from Dir and fetched.
	Hits, Misses int
}

// RoundTrip implements http.RoundTripper.
func (c *Cache) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	sum := sha256.Sum256(append([]byte(req.Method+" "+req.URL.String()+"\n"), body...))
	path := filepath.Join(c.Dir, hex.EncodeToString(sum[:])+".http")
	if saved, err := os.ReadFile(path); err == nil {
		if resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(saved)), req); err == nil {
			c.Hits++
			return resp, nil
		}
	}
	base := c.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	c.Misses++
	if resp.StatusCode != http.StatusOK {
		return resp, nil // an error is not kept: the next replay asks again
	}
	saved, err := httputil.DumpResponse(resp, true)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("replay cache: %w", err)
	}
	if err := os.WriteFile(path, saved, 0o600); err != nil {
		return nil, fmt.Errorf("replay cache: %w", err)
	}
	return http.ReadResponse(bufio.NewReader(bytes.NewReader(saved)), req)
}
