package collector

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// httpError is a collector's answer over http/protobuf that is not a
// success.
type httpError struct {
	url    string
	status string // "400 Bad Request"
	code   int
	text   string // the google.rpc.Status message, or an excerpt of the body
}

func (e *httpError) Error() string {
	if e.text == "" {
		return fmt.Sprintf("collector: POST %s: %s", e.url, e.status)
	}
	return fmt.Sprintf("collector: POST %s: %s: %s", e.url, e.status, e.text)
}

// postHTTP is one http/protobuf attempt.
func (c *Client) postHTTP(export context.Context, payload []byte) ([]byte, error) {
	ctx := export
	if c.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(export, c.cfg.Timeout, errors.New("collector: the export timeout passed"))
		defer cancel()
	}
	// the payload may be the exporter's buffer, reused once Export
	// returns: net/http may still read a body after Do returns (an
	// answer before the whole request), so the body is closed to it
	g := &bodyGate{}
	defer g.close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.target, g.reader(payload))
	if err != nil {
		return nil, fmt.Errorf("collector: %w", err)
	}
	req.ContentLength = int64(len(payload))
	req.GetBody = func() (io.ReadCloser, error) { return g.reader(payload), nil }
	req.Header.Set("User-Agent", c.userAgent)
	for k, v := range c.cfg.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if c.cfg.Gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		redactURLError(err)
		var ne net.Error
		if export.Err() == nil && (ctx.Err() != nil || errors.As(err, &ne) && ne.Timeout()) {
			// an attempt that timed out: the official retries what
			// net/http calls temporary, its client's timeout included
			if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
				return nil, &retryable{err: fmt.Errorf("collector: %w (%w)", err, cause)}
			}
			return nil, &retryable{err: fmt.Errorf("collector: %w", err)} // net/http's own timeout

		}
		if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
			return nil, fmt.Errorf("collector: %w (%w)", err, cause)
		}
		return nil, fmt.Errorf("collector: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return nil, fmt.Errorf("collector: reading the answer of %s: %w", c.shown, err)
	}
	if len(body) > maxResponse {
		return nil, fmt.Errorf("collector: the answer of %s is over %d bytes", c.shown, maxResponse)
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		if resp.Header.Get("Content-Type") != "application/x-protobuf" {
			return nil, nil // as the official: only a protobuf answer is read
		}
		return body, nil
	}
	e := &httpError{url: c.shown, status: resp.Status, code: resp.StatusCode, text: httpErrorText(resp.Header.Get("Content-Type"), body)}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return nil, &retryable{err: e, delay: retryAfter(resp.Header.Get("Retry-After"), time.Now())}
	}
	return nil, e
}

// httpErrorText is what an error answer says: the message of the
// google.rpc.Status it holds (OTLP/HTTP's error body), or else an
// excerpt of its text.
func httpErrorText(contentType string, body []byte) string {
	if contentType == "application/x-protobuf" {
		if st, err := decodeStatus(body); err == nil && st.message != "" {
			return st.message
		}
	}
	return excerpt(body, 300)
}

// excerpt is the start of b as text on one line, at most n bytes.
func excerpt(b []byte, n int) string {
	s := strings.TrimSpace(string(b))
	cut := len(s) > n
	if cut {
		s = s[:n]
		// a rune cut in half at the end is dropped; a bad byte elsewhere
		// is shown as '?' below
		for i := len(s) - 1; i >= 0 && i > len(s)-utf8.UTFMax; i-- {
			if utf8.RuneStart(s[i]) {
				if !utf8.FullRuneInString(s[i:]) {
					s = s[:i]
				}
				break
			}
		}
	}
	s = strings.Join(strings.Fields(strings.ToValidUTF8(s, "?")), " ")
	if cut {
		s += "…"
	}
	return s
}

// retryAfter is the wait a Retry-After header asks for: seconds or an
// HTTP date (0 when absent or unreadable). The official reads the seconds
// as nanoseconds, that is, ignores it.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s < 0 {
			return 0
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// errBodyGone is what a request body reads after its attempt ended.
var errBodyGone = errors.New("collector: the request body was released")

// bodyGate shuts the request bodies of one attempt to their reader when
// the attempt ends, so that their bytes can be reused.
type bodyGate struct {
	mu     sync.Mutex
	closed bool
}

// close ends every reader's access to its bytes.
func (g *bodyGate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// reader is a request body reading b until g is closed.
func (g *bodyGate) reader(b []byte) io.ReadCloser {
	return &gatedReader{g: g, r: bytes.NewReader(b)}
}

// gatedReader is bodyGate.reader's.
type gatedReader struct {
	g *bodyGate
	r *bytes.Reader
}

// Read reads the bytes, or fails once the attempt has ended.
func (r *gatedReader) Read(p []byte) (int, error) {
	r.g.mu.Lock()
	defer r.g.mu.Unlock()
	if r.g.closed {
		return 0, errBodyGone
	}
	return r.r.Read(p)
}

// Close does nothing: the gate releases the bytes.
func (r *gatedReader) Close() error { return nil }
