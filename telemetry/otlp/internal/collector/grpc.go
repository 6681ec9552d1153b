package collector

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// gRPC status codes this package tells apart.
const (
	codeOK                = 0
	codeCanceled          = 1
	codeUnknown           = 2
	codeDeadlineExceeded  = 4
	codeResourceExhausted = 8
	codeAborted           = 10
	codeOutOfRange        = 11
	codeInternal          = 13
	codeUnavailable       = 14
	codeDataLoss          = 15
	codeUnauthenticated   = 16
	codePermissionDenied  = 7
	codeUnimplemented     = 12
)

// grpcError is a gRPC status that is not OK.
type grpcError struct {
	url     string
	code    int
	message string
	delay   time.Duration // RetryInfo's, when the details hold one
	retry   bool          // whether the details hold a RetryInfo
	err     error         // the cause, when one was met here (the answer's gzip, its frame)
}

func (e *grpcError) Error() string {
	if e.err != nil {
		return fmt.Sprintf("collector: gRPC %s: code %d (%s): %v", e.url, e.code, codeName(e.code), e.err)
	}
	return fmt.Sprintf("collector: gRPC %s: code %d (%s): %s", e.url, e.code, codeName(e.code), e.message)
}

// Unwrap is the cause met here, nil for a status the server sent.
func (e *grpcError) Unwrap() error { return e.err }

func codeName(c int) string {
	names := [...]string{"OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound", "AlreadyExists",
		"PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted", "OutOfRange", "Unimplemented",
		"Internal", "Unavailable", "DataLoss", "Unauthenticated"}
	if c >= 0 && c < len(names) {
		return names[c]
	}
	return "Code(" + strconv.Itoa(c) + ")"
}

// classify makes e retryable as the official: the transient codes, and
// ResourceExhausted when the server said when to retry.
func (e *grpcError) classify() error {
	switch e.code {
	case codeCanceled, codeDeadlineExceeded, codeAborted, codeOutOfRange, codeUnavailable, codeDataLoss:
		return &retryable{err: e, delay: e.delay}
	case codeResourceExhausted:
		if e.retry {
			return &retryable{err: e, delay: e.delay}
		}
	}
	return e
}

// postGRPC is one unary gRPC call of the Export method with payload (the
// message, compressed when configured) over HTTP/2.
func (c *Client) postGRPC(ctx context.Context, payload []byte) ([]byte, error) {
	frame := make([]byte, 5, 5+len(payload))
	if c.cfg.Gzip {
		frame[0] = 1
	}
	binary.BigEndian.PutUint32(frame[1:], uint32(len(payload)))
	frame = append(frame, payload...)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.target, bytes.NewReader(frame))
	if err != nil {
		return nil, fmt.Errorf("collector: %w", err)
	}
	// HTTP/2 sends the names lower-case, as gRPC metadata is
	for k, v := range c.cfg.Headers {
		if strings.HasSuffix(strings.ToLower(k), "-bin") {
			v = base64.RawStdEncoding.EncodeToString([]byte(v)) // binary metadata, as gRPC sends it
		}
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	req.Header.Set("User-Agent", c.userAgent)
	req.Header.Set("Grpc-Accept-Encoding", "gzip")
	if c.cfg.Gzip {
		req.Header.Set("Grpc-Encoding", "gzip")
	}
	if d, ok := ctx.Deadline(); ok {
		req.Header.Set("Grpc-Timeout", grpcTimeout(time.Until(d)))
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		redactURLError(err)
		if cause := context.Cause(ctx); cause != nil {
			return nil, fmt.Errorf("collector: gRPC %s: %w (%w)", c.shown, err, cause)
		}
		// gRPC calls a transport failure Unavailable: retried
		return nil, &retryable{err: fmt.Errorf("collector: gRPC %s: unavailable: %w", c.shown, err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		e := &grpcError{url: c.shown, code: httpToCode(resp.StatusCode),
			message: strings.TrimSpace("HTTP " + resp.Status + " " + excerpt(body, 200))}
		return nil, e.classify()
	}
	if st := resp.Header.Get("Grpc-Status"); st != "" {
		// trailers-only: the status in the headers, no message
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
		return nil, c.status(resp.Header)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/grpc") {
		e := &grpcError{url: c.shown, code: codeUnknown, message: fmt.Sprintf("the answer's content-type is %q, not application/grpc", ct)}
		return nil, e
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+5+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("collector: gRPC %s: reading the answer: %w", c.shown, err)
		}
		return nil, &retryable{err: fmt.Errorf("collector: gRPC %s: reading the answer: %w", c.shown, err)}
	}
	if err := c.status(resp.Trailer); err != nil {
		return nil, err
	}
	msg, err := firstMessage(body, resp.Header.Get("Grpc-Encoding"))
	if err != nil {
		return nil, &grpcError{url: c.shown, code: codeInternal, err: err}
	}
	return msg, nil
}

// status is the error the grpc-status, grpc-message and
// grpc-status-details-bin in h say, nil for OK.
func (c *Client) status(h http.Header) error {
	s := h.Get("Grpc-Status")
	if s == "" {
		return &grpcError{url: c.shown, code: codeInternal, message: "the server sent no grpc-status"}
	}
	code, err := strconv.Atoi(s)
	if err != nil {
		return &grpcError{url: c.shown, code: codeUnknown, message: fmt.Sprintf("grpc-status %q", s)}
	}
	if code == codeOK {
		return nil
	}
	e := &grpcError{url: c.shown, code: code, message: percentDecode(h.Get("Grpc-Message"))}
	if d := h.Get("Grpc-Status-Details-Bin"); d != "" {
		if b, err := decodeBin(d); err == nil {
			if st, err := decodeStatus(b); err == nil {
				e.delay, e.retry = st.retryDelay, st.hasRetryInfo
				if e.message == "" {
					e.message = st.message
				}
			}
		}
	}
	return e.classify()
}

// firstMessage is the message of the first length-prefixed frame of
// body, decompressed when its flag says (encoding: the grpc-encoding).
func firstMessage(body []byte, encoding string) ([]byte, error) {
	if len(body) == 0 {
		return nil, nil
	}
	if len(body) < 5 {
		return nil, fmt.Errorf("a frame of %d bytes, under its 5-byte prefix", len(body))
	}
	n := binary.BigEndian.Uint32(body[1:5])
	if n > maxResponse || int(n) > len(body)-5 {
		return nil, fmt.Errorf("a frame says %d bytes, %d came", n, len(body)-5)
	}
	msg := body[5 : 5+n]
	if body[0]&1 == 0 {
		return msg, nil
	}
	if encoding != "gzip" {
		return nil, fmt.Errorf("a compressed answer in %q, not gzip", encoding)
	}
	z, err := gzip.NewReader(bytes.NewReader(msg))
	if err != nil {
		return nil, fmt.Errorf("the answer's gzip: %w", err)
	}
	out, err := io.ReadAll(io.LimitReader(z, maxResponse+1))
	if err != nil {
		return nil, fmt.Errorf("the answer's gzip: %w", err)
	}
	if len(out) > maxResponse {
		return nil, fmt.Errorf("the answer is over %d bytes", maxResponse)
	}
	return out, nil
}

// httpToCode is the gRPC code of an HTTP status that is not 200, as gRPC
// maps it (doc/http-grpc-status-mapping.md).
func httpToCode(status int) int {
	switch status {
	case http.StatusBadRequest:
		return codeInternal
	case http.StatusUnauthorized:
		return codeUnauthenticated
	case http.StatusForbidden:
		return codePermissionDenied
	case http.StatusNotFound:
		return codeUnimplemented
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return codeUnavailable
	}
	return codeUnknown
}

// grpcTimeout is d as a grpc-timeout value: at most 8 digits and a unit,
// rounded up.
func grpcTimeout(d time.Duration) string {
	if d <= 0 {
		return "1n"
	}
	units := []struct {
		size time.Duration
		name string
	}{{time.Nanosecond, "n"}, {time.Microsecond, "u"}, {time.Millisecond, "m"}, {time.Second, "S"}, {time.Minute, "M"}, {time.Hour, "H"}}
	for _, u := range units {
		n := (d + u.size - 1) / u.size
		if n <= 99999999 {
			return strconv.FormatInt(int64(n), 10) + u.name
		}
	}
	return "99999999H"
}

// percentDecode undoes gRPC's percent-encoding of grpc-message; a
// malformed escape is kept as it is.
func percentDecode(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// decodeBin decodes a -bin metadata value: base64, padded or not.
func decodeBin(v string) ([]byte, error) {
	if len(v)%4 == 0 {
		if b, err := base64.StdEncoding.DecodeString(v); err == nil {
			return b, nil
		}
	}
	b, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(v, "="))
	if err != nil {
		return nil, errors.New("collector: a -bin value that is not base64")
	}
	return b, nil
}
