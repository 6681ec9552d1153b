// Package googletoken holds the one rule for a Google access token that
// cannot be had, for the wires that send with one (provider/vertex,
// provider/googlecloud): a failure is final (provider.Final) unless it is
// known to pass (Passing) — the token endpoint or the metadata server
// answering 5xx, 408 or 429, or the network between failing — since
// asking again for anything else (a refusal, a bad key file, a token
// endpoint that answers no token, a metadata server's 403) only gets the
// same failure again. A passing failure stays an error the request is
// retried for, by the wire's sender and the agent, as a send's own blip
// is: golang.org/x/oauth2 does not retry a token's fetch itself.
//
// It must not fetch, cache or change a token itself (its token sources
// do), nor read a credential.
package googletoken

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"

	"cloud.google.com/go/compute/metadata"
	"golang.org/x/oauth2"

	"github.com/myelin-run/myelin/provider"
)

// Source is ts whose failures not known to pass are final errors; its
// tokens are ts's, and its errors, each marked provider.Unsent (no
// request is written without a token).
func Source(ts oauth2.TokenSource) oauth2.TokenSource { return source{ts} }

type source struct{ ts oauth2.TokenSource }

func (s source) Token() (*oauth2.Token, error) {
	t, err := s.ts.Token()
	switch {
	case err == nil:
		return t, nil
	case Passing(err):
		// nothing of the request is written without a token
		return nil, provider.Unsent(err)
	}
	return nil, provider.Final(provider.Unsent(err))
}

// Passing reports whether err, a token source's failure, is one another
// ask may mend: a status that passes (5xx, 408, 429) from the token
// endpoint (*oauth2.RetrieveError) or the metadata server
// (*metadata.Error), a network failure below it (a connection refused or
// reset, a name not resolved, a timeout, a connection closed early), the
// turn's own cancel (its sender ends the request for it), or the same in
// the words x/oauth2 flattens them into where it keeps no type. Anything
// else — a refusal, the metadata server's 403 or its 404
// (metadata.NotDefinedError), a key that cannot be read, an answer that
// is no token, an error not known here — is not.
func Passing(err error) bool {
	if err == nil {
		return false
	}
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return re.Response != nil && passingStatus(re.Response.StatusCode)
	}
	var me *metadata.Error
	if errors.As(err, &me) {
		return passingStatus(me.Code)
	}
	var nd metadata.NotDefinedError
	if errors.As(err, &nd) {
		return false
	}
	if errors.Is(err, context.Canceled) || network(err) {
		return true
	}
	return passingText(err.Error())
}

// Refused reports whether err holds the token endpoint's (or the
// metadata server's) refusal: an answer below 500 that is not 408
// (timeout) or 429 (too many requests). A refusal is never Passing.
func Refused(err error) bool {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return re.Response != nil && refusedStatus(re.Response.StatusCode)
	}
	var me *metadata.Error
	if errors.As(err, &me) {
		return refusedStatus(me.Code)
	}
	status, ok := statusInText(err.Error())
	return ok && refusedStatus(status)
}

func passingStatus(status int) bool {
	return status >= 500 || status == http.StatusRequestTimeout || status == http.StatusTooManyRequests
}

func refusedStatus(status int) bool {
	return status >= 400 && status < 500 && !passingStatus(status)
}

// network reports whether err's chain holds a failure of the network
// between myelin and the token's server, by its type.
func network(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	var ne net.Error
	switch {
	case errors.As(err, &op), errors.As(err, &dns):
		return true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return true
	case errors.As(err, &ne) && ne.Timeout():
		return true
	}
	return false
}

// passingText reports whether msg, an error x/oauth2 flattened with %v
// (losing its type), says a passing status or a network failure.
func passingText(msg string) bool {
	if status, ok := statusInText(msg); ok {
		return passingStatus(status)
	}
	for _, words := range networkWords {
		if strings.Contains(msg, words) {
			return true
		}
	}
	// net/http's *url.Error for a connection the server closed before
	// answering ("Post \"URL\": EOF"), or a body's read cut short
	return strings.HasSuffix(msg, ": EOF")
}

// networkWords are the words of a network failure as net and net/http
// write them, flattened into text by x/oauth2 v0.36.0 with %v:
// jwt/jwt.go ("oauth2: cannot fetch token: " and net/http's *url.Error
// or a body's read error: the service account flow),
// internal/token.go ("oauth2: cannot fetch token: " and a body's read
// error), google/internal/impersonate/impersonate.go ("oauth2/google:
// unable to generate access token: "), google/internal/stsexchange/
// sts_exchange.go ("oauth2/google: invalid response from Secure Token
// Server: ") and google/externalaccount/urlcredsource.go ("invalid
// response when retrieving subject token: "). A JSON parse error ("cannot
// fetch token: invalid character ...", "unexpected end of JSON input")
// says none of them.
var networkWords = []string{
	"connection refused",
	"connection reset",
	"broken pipe",
	"unexpected EOF",
	"i/o timeout",
	"deadline exceeded",             // net/http's Client.Timeout, a context's
	"TLS handshake timeout",         // net/http/transport.go
	"timeout awaiting response",     // net/http/transport.go
	"no such host",                  // net's DNSError
	"server misbehaving",            // net's DNSError
	"network is unreachable",        // syscall.ENETUNREACH
	"no route to host",              // syscall.EHOSTUNREACH
	"server closed idle connection", // net/http/transport.go
	"transport connection broken",   // net/http/transport.go
}

// statusInText is the status x/oauth2 v0.36.0 wrote into msg where it
// keeps no type: google/internal/stsexchange/sts_exchange.go and
// google/internal/impersonate/impersonate.go ("oauth2/google: status
// code 400: ..."), google/externalaccount/urlcredsource.go
// ("oauth2/google/externalaccount: status code 401: ..."), or a
// *oauth2.RetrieveError's text flattened into another's with %v by
// google/internal/impersonate/impersonate.go (its source credentials
// refused: "oauth2/google: unable to generate access token: ...: oauth2:
// \"invalid_grant\" ..." — token.go's RetrieveError.Error with an RFC
// 6749 §5.2 code, a refusal (400) — or "oauth2: cannot fetch token: 400
// Bad Request", token.go's without one).
func statusInText(msg string) (int, bool) {
	for _, code := range []string{"invalid_request", "invalid_client", "invalid_grant", "unauthorized_client", "unsupported_grant_type", "invalid_scope"} {
		if strings.Contains(msg, `oauth2: "`+code+`"`) {
			return http.StatusBadRequest, true
		}
	}
	if i := strings.Index(msg, "oauth2: cannot fetch token: "); i >= 0 {
		rest := msg[i+len("oauth2: cannot fetch token: "):]
		// a status is three digits and a space ("503 Service
		// Unavailable"); anything else there is net/http's error or a
		// parse error (jwt/jwt.go)
		if len(rest) >= 4 && rest[3] == ' ' {
			if n, err := strconv.Atoi(rest[:3]); err == nil {
				return n, true
			}
		}
	}
	for _, prefix := range []string{"oauth2/google: status code ", "oauth2/google/externalaccount: status code "} {
		i := strings.Index(msg, prefix)
		if i < 0 {
			continue
		}
		rest := msg[i+len(prefix):]
		if len(rest) < 4 || rest[3] != ':' {
			continue
		}
		if n, err := strconv.Atoi(rest[:3]); err == nil {
			return n, true
		}
	}
	return 0, false
}

// Within is ts's token, or ctx's error as soon as ctx ends before ts
// answers: x/oauth2's token sources take no context, and a token
// endpoint that takes the connection and never answers would otherwise
// hold a turn the user cancelled. The ask goes on, on its own goroutine,
// until ts returns (bounded only by its HTTP client's timeout, if any);
// its result is then dropped, but a token a caching source
// (oauth2.ReuseTokenSource) got is kept for the next ask. With a ctx
// that never ends, ts is asked on the caller's goroutine.
func Within(ctx context.Context, ts oauth2.TokenSource) (*oauth2.Token, error) {
	if ctx.Done() == nil {
		return ts.Token()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	type answer struct {
		tok *oauth2.Token
		err error
	}
	done := make(chan answer, 1) // the ask never blocks on a caller gone
	go func() {
		tok, err := ts.Token()
		done <- answer{tok, err}
	}()
	select {
	case a := <-done:
		return a.tok, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
