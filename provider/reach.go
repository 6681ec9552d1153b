package provider

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"
)

// This file says, in words, what happened to a request that did not get
// an answer: each retry as it is about to be made (RetryNotice, heard
// through WithRetryNotice), and the failure that ended the retries
// (ConnectionError). A wire's sending (internal/send, provider/gemini)
// reports both; the agent turns the notices into events and reads
// NeverReached to know that nothing of a request reached the provider.

// RetryNotice says that an attempt of a request failed before any answer
// was read and that the request is about to be sent again.
type RetryNotice struct {
	// Attempt is the attempt about to be made (2 for the first retry),
	// of Attempts in all at most; Attempts is 0 when the retries are
	// bounded by time instead (For).
	Attempt, Attempts int
	// For, when the retries are bounded by time (Attempts 0), is how long
	// after the first attempt they may go on.
	For time.Duration
	// Wait is how long the sender waits before it.
	Wait time.Duration
	// URL is where the request goes, as Redact writes it.
	URL string
	// Status is the failed attempt's HTTP status, or 0 when it got no
	// answer (Err says why).
	Status int
	// Err is why the failed attempt got no answer, when Status is 0.
	Err error
	// Why, when set, says why the attempt failed in place of Status and
	// Err: the agent's resend of a whole request says it so (Failure).
	Why string
}

// Cause is why the attempt failed, in words: Why when set, else the
// status ("429 Too Many Requests"), or the failure to connect (Words).
func (n RetryNotice) Cause() string {
	if n.Why != "" {
		return n.Why
	}
	if n.Status != 0 {
		return statusWords(n.Status)
	}
	return Words(n.Err)
}

// retryKey is the context key of the observer WithRetryNotice sets.
type retryKey struct{}

// WithRetryNotice is ctx with observe called, by the wire sending in it,
// before each wait for a retry. observe runs on the sending goroutine: it
// must return quickly and must not send through the same provider.
func WithRetryNotice(ctx context.Context, observe func(RetryNotice)) context.Context {
	return context.WithValue(ctx, retryKey{}, observe)
}

// NoticeRetry tells ctx's observer, if there is one, of n. A wire calls
// it once per retry, before the wait; without an observer it costs one
// context lookup.
func NoticeRetry(ctx context.Context, n RetryNotice) {
	if observe, ok := ctx.Value(retryKey{}).(func(RetryNotice)); ok && observe != nil {
		observe(n)
	}
}

// ConnectionError is the error of a request whose last attempt got no
// answer from the provider: the connection could not be made, or broke
// before an answer came, or its authorization failed for a reason
// another attempt may mend (Err marked Unsent: a token endpoint's 5xx or
// refused connection). A refusal is Final: it ends the retries at once,
// and is one of these only when an earlier attempt reached the provider
// (internal/send wraps the last error so then, Reached set). Err is
// the last attempt's error (errors.Is and errors.As reach it:
// syscall.ECONNREFUSED, *net.DNSError, an *oauth2.RetrieveError, ...).
//
// A wire reports it prefixed with its name, wrapped ("anthropic: %w").
type ConnectionError struct {
	// URL is where the request went, as Redact writes it: no key, no
	// query.
	URL string
	// Attempts is how many attempts were made, retries included.
	Attempts int
	// Reached is set when some attempt got further than connecting: an
	// answer came, or the request may have been written. Without it,
	// every attempt failed before anything of the request was sent
	// (NeverReached).
	Reached bool
	Err     error
}

// Error says the URL, the attempts and the cause in words: "could not
// reach http://127.0.0.1:9/v1/messages after 5 attempts: connection
// refused by 127.0.0.1:9"; when its authorization failed, "sent nothing
// to ... after 2 attempts: could not get the credentials: ...".
func (e *ConnectionError) Error() string {
	what, why := "could not reach", Words(e.Err)
	var u unsent
	unsentLast := errors.As(e.Err, &u)
	switch {
	case e.Reached && unsentLast:
		// an earlier attempt reached the provider; the last was never
		// sent, for its authorization failed
		what, why = "got no answer from", "the last attempt sent nothing: "+why
	case e.Reached:
		what = "got no answer from"
	case unsentLast:
		what = "sent nothing to" // its authorization failed (Words says why)
	}
	switch e.Attempts {
	case 0: // not counted (Unanswered)
		return fmt.Sprintf("%s %s: %s", what, e.URL, why)
	case 1:
		return fmt.Sprintf("%s %s after 1 attempt: %s", what, e.URL, why)
	}
	return fmt.Sprintf("%s %s after %d attempts: %s", what, e.URL, e.Attempts, why)
}

// Unanswered is err, the error of a request an SDK sent (its retries
// done), as a *ConnectionError when it is net/http's failure to get an
// answer (a *url.Error that is no context's end): its URL redacted, its
// attempts not counted, Reached unless err is a failure to connect
// (Unconnected) — which the last attempt's error alone tells, so a
// request whose earlier attempt got an error status reads as never
// reached. Any other err, a *ConnectionError or a Final error included,
// is returned as it is. A wire reports what its SDK sent through it (a whole answer,
// NoStream); what internal/send sends is a *ConnectionError already.
func Unanswered(err error) error {
	var ce *ConnectionError
	var ue *url.Error
	if err == nil || errors.As(err, &ce) || !errors.As(err, &ue) || IsFinal(err) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	where := ue.URL
	if u, perr := url.Parse(ue.URL); perr == nil {
		where = Redact(u)
	} else {
		where, _, _ = strings.Cut(where, "?")
	}
	return &ConnectionError{URL: where, Reached: !Unconnected(err), Err: err}
}

// Unwrap returns the last attempt's error.
func (e *ConnectionError) Unwrap() error { return e.Err }

// NeverReached reports whether err says that nothing of a request reached
// the provider: a ConnectionError none of whose attempts got past
// connecting, or (from a sender that does not count attempts) a failure
// to connect itself (Unconnected). An error answer (4xx, 5xx), a broken
// connection or a cancelled request is not: the provider may have had
// the request.
func NeverReached(err error) bool {
	if err == nil {
		return false
	}
	var ce *ConnectionError
	if errors.As(err, &ce) {
		return !ce.Reached
	}
	return Unconnected(err)
}

// Unconnected reports whether err is a failure that comes before anything
// of a request is written: the name not resolved, the connection (to the
// provider or a proxy) not made, the TLS handshake failed, an error
// marked Unsent (its authorization failed). Narrowly so: a
// connection that broke once made, or a timeout after it was made, is
// not one.
func Unconnected(err error) bool {
	if err == nil {
		return false
	}
	var u unsent
	if errors.As(err, &u) {
		return true
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) && (op.Op == "dial" || op.Op == "proxyconnect") {
		return true
	}
	return certificate(err) != "" || isRecordHeader(err)
}

// isRecordHeader reports whether err is a TLS handshake that got no TLS
// from the server (an http:// server at an https:// URL); net/http says
// so in words of its own, which do not wrap the TLS error.
func isRecordHeader(err error) bool {
	var rh tls.RecordHeaderError
	return errors.As(err, &rh) || strings.Contains(err.Error(), plainAnswer)
}

// plainAnswer is net/http's error for an answer in plain HTTP to a TLS
// handshake.
const plainAnswer = "http: server gave HTTP response to HTTPS client"

// certificate is what is wrong with the server's certificate that err
// reports, or "" when err is not about one.
func certificate(err error) string {
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		verify   *tls.CertificateVerificationError
	)
	switch {
	case errors.As(err, &unknown):
		return "it is signed by an unknown authority"
	case errors.As(err, &hostname):
		return "it is not valid for " + hostname.Host
	case errors.As(err, &invalid):
		if invalid.Reason == x509.Expired {
			return "it has expired or is not valid yet"
		}
		return "it is not valid (" + invalid.Error() + ")"
	case errors.As(err, &verify):
		return "it could not be verified (" + verify.Err.Error() + ")"
	}
	return ""
}

// Words is why a request got no answer, in words: "connection refused by
// 127.0.0.1:9", "no such host nohost.invalid", "timed out connecting to
// ...", "TLS certificate problem: ...", "connection reset by ...", "the
// server closed the connection before answering"; an authorization that
// failed (Unsent) is "could not get the credentials: " and the first
// line of its own text. An error it does not know is its own text.
func Words(err error) string {
	if err == nil {
		return "no error"
	}
	var u unsent
	if errors.As(err, &u) {
		// the credentials' own words: a cause below them (a token
		// endpoint's refused connection) is not the provider's. Their
		// first line only: x/oauth2 adds the token endpoint's body on
		// the next ("Response: ..."), an HTML page as often as not,
		// which errors.As still reaches (oauth2.RetrieveError.Body).
		return "could not get the credentials: " + firstLine(u.Error())
	}
	addr := ""
	var op *net.OpError
	if errors.As(err, &op) && op.Addr != nil {
		addr = op.Addr.String()
	}
	by := func(s string) string {
		if addr != "" {
			return s + " by " + addr
		}
		return s
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		switch {
		case dns.IsNotFound:
			return "no such host " + dns.Name + " (the name does not resolve)"
		case dns.IsTimeout:
			return "timed out looking up " + dns.Name
		}
		return "could not look up " + dns.Name + ": " + dns.Err
	}
	if c := certificate(err); c != "" {
		return "TLS certificate problem: " + c
	}
	if isRecordHeader(err) {
		return "the TLS handshake failed: the server did not answer in TLS (is its URL http://, not https://?)"
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return by("connection refused")
	case errors.Is(err, syscall.ECONNRESET):
		return by("connection reset")
	case errors.Is(err, syscall.EHOSTUNREACH):
		return by("host unreachable")
	case errors.Is(err, syscall.ENETUNREACH):
		return by("network unreachable")
	case errors.Is(err, syscall.EPIPE):
		return by("connection closed while the request was written")
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the server closed the connection before answering"
	}
	var ne net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		if op != nil && op.Op == "dial" && addr != "" {
			return "timed out connecting to " + addr
		}
		return "timed out waiting for an answer"
	}
	// net/http's *url.Error says "Post "URL": ..." before the cause: the
	// URL is said elsewhere, the cause is what is wanted
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		return ue.Err.Error()
	}
	return err.Error()
}

// firstLine is msg's first line, cut cleanly: a quote in backticks the
// first line opens and a later line closes (compute/metadata's "compute:
// Received 403 `...`" around a body that ends in a newline) is closed,
// with "…" when something of it was left off.
func firstLine(msg string) string {
	first, rest, cut := strings.Cut(strings.TrimSpace(msg), "\n")
	first = strings.TrimSpace(first)
	if cut && strings.Count(first, "`")%2 == 1 {
		if strings.TrimSpace(rest) != "`" {
			first += " …"
		}
		first += "`"
	}
	return first
}

// Redact is u as an error may show it: scheme://host:port/path, without
// the user, the password, the query or the fragment (a key may be in any
// of them).
func Redact(u *url.URL) string {
	if u == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString(u.Scheme)
	b.WriteString("://")
	b.WriteString(u.Host)
	b.WriteString(u.EscapedPath())
	return b.String()
}
