package awssts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/smithy-go"
)

// apiVersion is STS's query API version.
const apiVersion = "2011-06-15"

// userAgent is what myelin says it is to STS.
const userAgent = "myelin (aws credentials)"

// maxBody bounds what is read of an answer; STS's are a few KiB.
const maxBody = 1 << 20

// retryableStatus reports whether the SDK's standard retryer retries an
// answer with this HTTP status whatever it says. (Switches, not maps:
// nothing to build at init in every myelin process.)
func retryableStatus(status int) bool {
	switch status {
	case 500, 502, 503, 504:
		return true
	}
	return false
}

// retryableCode reports whether the SDK's standard retryer retries this
// error code in every service: timeouts and throttling.
func retryableCode(code string) bool {
	switch code {
	case "RequestTimeout", "RequestTimeoutException",
		"Throttling", "ThrottlingException", "ThrottledException",
		"RequestThrottledException", "TooManyRequestsException",
		"ProvisionedThroughputExceededException", "TransactionInProgressException",
		"RequestLimitExceeded", "BandwidthLimitExceeded", "LimitExceededException",
		"RequestThrottled", "SlowDown", "PriorRequestNotComplete",
		"EC2ThrottledException":
		return true
	}
	return false
}

// signFunc prepares a request's authentication, dated at.
type signFunc func(ctx context.Context, req *http.Request, body []byte, at time.Time) error

// operation is one STS action as a provider sends it.
type operation struct {
	form url.Values
	// sign signs the request; nil sends it unsigned.
	sign signFunc
	// result is the answer's element holding the credentials.
	result string
	// retryCode says which error codes of this action are retried
	// besides retryableCode's.
	retryCode func(code string) bool
	// skew is how far ahead of this machine's clock STS's was at the
	// last call (from its Date header), kept across calls as the SDK's
	// client keeps it, added to the signing time.
	skew *atomic.Int64
}

// clockSkewCode reports whether the SDK's retryer retries this error
// code when STS's Date differs from the clock the request was signed
// with by more than skewThreshold; the retry is signed with STS's time.
func clockSkewCode(code string) bool {
	switch code {
	case "InvalidSignatureException", "SignatureDoesNotMatch", "AuthFailure",
		"RequestTimeTooSkewed", "AccessDeniedException":
		return true
	}
	return false
}

const skewThreshold = 4 * time.Minute

// call sends op to STS until an answer, an error not worth retrying, or
// c.MaxAttempts, and reads the credentials in the answer.
func (c Client) call(ctx context.Context, op operation) (aws.Credentials, error) {
	target, err := url.Parse(c.Endpoint)
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("STS endpoint: %w", err)
	}
	if target.Scheme == "" || target.Host == "" {
		return aws.Credentials{}, fmt.Errorf("STS endpoint %q is not an absolute URL", c.Endpoint)
	}
	if target.Path == "" || target.Path[0] != '/' {
		target.Path = "/" + target.Path
	}
	target.RawQuery, target.Fragment = "", ""
	body := []byte(op.form.Encode())
	maxAttempts := c.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = 3
	}
	skew := time.Duration(op.skew.Load())
	for attempt := 1; ; attempt++ {
		a := c.attempt(ctx, target, body, op, skew)
		// As the SDK: the next attempt is signed with the skew this one
		// saw (none without a Date), and the last one's is kept.
		skew = a.skew
		if a.err == nil || !a.retry || attempt >= maxAttempts {
			if a.skewSeen {
				op.skew.Store(int64(a.skew))
			}
		}
		if a.err == nil {
			return a.creds, nil
		}
		if !a.retry || ctx.Err() != nil {
			return aws.Credentials{}, a.err
		}
		if attempt >= maxAttempts {
			return aws.Credentials{}, fmt.Errorf("gave up after %s: %w", attempts(attempt), a.err)
		}
		if werr := wait(ctx, c.backoff(attempt)); werr != nil {
			return aws.Credentials{}, fmt.Errorf("%w (waiting to retry after: %v)", werr, a.err)
		}
	}
}

func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}

// attemptResult is what one attempt gave: credentials or an error, and
// whether that error is worth another attempt; the clock skew STS's Date
// showed, if it sent one.
type attemptResult struct {
	creds    aws.Credentials
	err      error
	retry    bool
	skew     time.Duration
	skewSeen bool
}

// attempt sends the request once, signed (if op signs) at this clock
// plus skew.
func (c Client) attempt(ctx context.Context, target *url.URL, body []byte, op operation, skew time.Duration) (a attemptResult) {
	if err := ctx.Err(); err != nil {
		a.err = fmt.Errorf("not sent: %w", err)
		return a
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target.String(), bytes.NewReader(body))
	if err != nil {
		a.err = fmt.Errorf("STS request: %w", err)
		return a
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("User-Agent", userAgent)
	if op.sign != nil {
		if err := op.sign(ctx, req, body, time.Now().UTC().Add(skew)); err != nil {
			a.err, a.retry = err, retryableNetError(err)
			return a
		}
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	sent := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		a.err, a.retry = fmt.Errorf("sending to STS: %w", err), retryableSendError(err)
		return a
	}
	defer resp.Body.Close()
	a.skew, a.skewSeen = clockSkew(resp.Header, sent, time.Now())
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		a.err = fmt.Errorf("reading STS's answer (HTTP %d): %w", resp.StatusCode, err)
		a.retry = retryableStatus(resp.StatusCode) || retryableNetError(err)
		return a
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		apiErr, err := readError(data, resp.StatusCode)
		if err != nil {
			a.err, a.retry = err, retryableStatus(resp.StatusCode)
			return a
		}
		skewed := clockSkewCode(apiErr.Code) && a.skewSeen && (skew-a.skew > skewThreshold || a.skew-skew > skewThreshold)
		a.err = apiErr
		a.retry = skewed || retryableStatus(resp.StatusCode) || retryableCode(apiErr.Code) || op.retryCode(apiErr.Code)
		return a
	}
	if a.creds, err = readCredentials(data, op.result); err != nil {
		a.err = fmt.Errorf("STS's answer (HTTP %d): %w", resp.StatusCode, err)
	}
	return a
}

// clockSkew is how far ahead of this machine's clock STS's was, from
// the answer's Date, against the middle of the exchange (sent to got); as
// the SDK, none from a cached answer (with an Age) or a slow exchange.
func clockSkew(h http.Header, sent, got time.Time) (time.Duration, bool) {
	date, err := http.ParseTime(h.Get("Date"))
	if err != nil || h.Get("Age") != "" {
		return 0, false
	}
	elapsed := got.Sub(sent)
	if elapsed > 15*time.Minute {
		return 0, false
	}
	return date.Sub(sent.Add(elapsed / 2)), true
}

// signV4 signs req with creds for STS in region, as the SDK's client does
// (the payload's SHA-256 in the signature, no X-Amz-Content-Sha256
// header; a session token in X-Amz-Security-Token).
func signV4(ctx context.Context, req *http.Request, body []byte, creds aws.Credentials, region string, at time.Time) error {
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "sts", region, at); err != nil {
		return fmt.Errorf("signing the STS request: %w", err)
	}
	return nil
}

// backoff is the wait before retry number attempt.
func (c Client) backoff(attempt int) time.Duration {
	if c.Backoff != nil {
		return c.Backoff(attempt)
	}
	// The SDK's standard retryer: up to 2^attempt s, 20 s from attempt 5.
	const maxBackoff = 20 * time.Second
	if attempt > int(math.Log2(float64(maxBackoff/time.Second))) {
		return maxBackoff
	}
	return time.Duration(rand.Float64() * float64(int64(1)<<attempt) * float64(time.Second))
}

// wait sleeps for d or until ctx is done.
func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retryableSendError reports whether a failure to send a request, or
// to receive the answer's head, is worth retrying: as the SDK's, always
// but for a cancelled context and a name that does not exist.
func retryableSendError(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var dns *net.DNSError
	return !errors.As(err, &dns) || !dns.IsNotFound
}

// retryableNetError reports whether err, met reading an answer or
// getting the source credentials, is a network failure the SDK's
// retryer retries there: a refused, reset or closed connection, a failed
// dial, a timeout, a temporary DNS failure; not a name that does not
// exist, not a cancelled context.
func retryableNetError(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		if dns.IsNotFound {
			return false
		}
		if dns.IsTemporary || dns.IsTimeout {
			return true
		}
	}
	msg := err.Error()
	if strings.Contains(msg, "connection reset") || strings.Contains(msg, "use of closed network connection") ||
		strings.Contains(msg, "connection refused") {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var timeout interface{ Timeout() bool }
	return errors.As(err, &timeout) && timeout.Timeout()
}

// apiError is STS's ErrorResponse: its code and message, the HTTP status
// and the request's id. It is a smithy.APIError, as the SDK's errors are.
type apiError struct {
	Code, Message, RequestID string
	Status                   int
	fault                    smithy.ErrorFault
}

func (e *apiError) Error() string {
	s := fmt.Sprintf("STS error %s (HTTP %d): %s", e.Code, e.Status, e.Message)
	if e.RequestID != "" {
		s += " (request id " + e.RequestID + ")"
	}
	return s
}

// ErrorCode is STS's error code.
func (e *apiError) ErrorCode() string { return e.Code }

// ErrorMessage is STS's message.
func (e *apiError) ErrorMessage() string { return e.Message }

// ErrorFault is whose fault STS says it is (Sender, Receiver).
func (e *apiError) ErrorFault() smithy.ErrorFault { return e.fault }

var _ smithy.APIError = (*apiError)(nil)

// readError reads an ErrorResponse (ROOT/Error/{Type,Code,Message},
// ROOT/RequestId; names as written). An empty body is the SDK's
// UnknownError.
func readError(data []byte, status int) (*apiError, error) {
	var doc struct {
		Type      string `xml:"Error>Type"`
		Code      string `xml:"Error>Code"`
		Message   string `xml:"Error>Message"`
		RequestID string `xml:"RequestId"`
	}
	if err := xml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil && err != io.EOF {
		return nil, fmt.Errorf("STS failed (HTTP %d) with an answer that is not an error response: %w", status, err)
	}
	e := &apiError{Code: doc.Code, Message: doc.Message, RequestID: doc.RequestID, Status: status}
	if e.Code == "" {
		e.Code = "UnknownError"
	}
	if e.Message == "" {
		e.Message = e.Code
	}
	switch doc.Type {
	case "Sender":
		e.fault = smithy.FaultClient
	case "Receiver":
		e.fault = smithy.FaultServer
	}
	return e, nil
}

// element is an XML element as the SDK's STS client reads one: its name
// and its text (elements within it, none here, are left).
type element struct {
	name string
	text string
	kids []*element
}

// child is e's first child named name, whatever the case.
func (e *element) child(name string) *element {
	if e == nil {
		return nil
	}
	for _, k := range e.kids {
		if strings.EqualFold(k.name, name) {
			return k
		}
	}
	return nil
}

// readCredentials reads ROOT/RESULT/Credentials and
// ROOT/RESULT/AssumedRoleUser/Arn of a successful answer, element names
// in any case as the SDK reads them. The document is read up to the end
// of RESULT. An empty answer has no credentials.
func readCredentials(data []byte, result string) (aws.Credentials, error) {
	d := xml.NewDecoder(bytes.NewReader(data))
	root, err := nextStart(d)
	if err == io.EOF {
		if len(bytes.TrimSpace(data)) > 0 {
			return aws.Credentials{}, errors.New("the answer is not XML")
		}
		return aws.Credentials{}, errors.New("the answer is empty")
	}
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("the answer is not XML: %w", err)
	}
	var res *element
	for res == nil {
		tok, err := d.Token()
		if err != nil {
			return aws.Credentials{}, fmt.Errorf("reading the answer's %s: %w", result, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if !strings.EqualFold(t.Name.Local, result) {
				if err := d.Skip(); err != nil {
					return aws.Credentials{}, fmt.Errorf("reading the answer: %w", err)
				}
				continue
			}
			if res, err = readElement(d, t); err != nil {
				return aws.Credentials{}, fmt.Errorf("reading the answer's %s: %w", result, err)
			}
		case xml.EndElement:
			return aws.Credentials{}, fmt.Errorf("the answer (%s) has no %s", root.Name.Local, result)
		}
	}
	c := res.child("Credentials")
	if c == nil {
		return aws.Credentials{}, errors.New("the answer holds no credentials")
	}
	creds := aws.Credentials{CanExpire: true}
	if k := c.child("AccessKeyId"); k != nil {
		creds.AccessKeyID = k.text
	}
	if k := c.child("SecretAccessKey"); k != nil {
		creds.SecretAccessKey = k.text
	}
	if k := c.child("SessionToken"); k != nil {
		creds.SessionToken = k.text
	}
	if k := c.child("Expiration"); k != nil {
		if creds.Expires, err = parseTime(k.text); err != nil {
			return aws.Credentials{}, fmt.Errorf("the credentials' Expiration: %w", err)
		}
	}
	if arn := res.child("AssumedRoleUser").child("Arn"); arn != nil {
		// arn:PARTITION:sts::ACCOUNT:assumed-role/…, as stscreds reads it.
		if parts := strings.Split(arn.text, ":"); len(parts) >= 5 {
			creds.AccountID = parts[4]
		}
	}
	return creds, nil
}

// nextStart is the next start element of d.
func nextStart(d *xml.Decoder) (xml.StartElement, error) {
	for {
		tok, err := d.Token()
		if err != nil {
			return xml.StartElement{}, err
		}
		if t, ok := tok.(xml.StartElement); ok {
			return t, nil
		}
	}
}

// readElement reads the element start opened, to its end.
func readElement(d *xml.Decoder, start xml.StartElement) (*element, error) {
	e := &element{name: start.Name.Local}
	var text strings.Builder
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			k, err := readElement(d, t)
			if err != nil {
				return nil, err
			}
			e.kids = append(e.kids, k)
		case xml.CharData:
			text.Write(t)
		case xml.EndElement:
			e.text = text.String()
			return e, nil
		}
	}
}

// timeLayouts are the timestamps the SDK reads in STS's answers.
var timeLayouts = []string{
	"2006-01-02T15:04:05.999999999Z",
	"2006-01-02T15:04:05.999999999",
	time.RFC3339Nano,
	time.RFC3339,
}

func parseTime(s string) (time.Time, error) {
	var first error
	for _, layout := range timeLayouts {
		t, err := time.Parse(layout, s)
		if err == nil {
			return t, nil
		}
		if first == nil {
			first = err
		}
	}
	return time.Time{}, fmt.Errorf("not a time: %w", first)
}
