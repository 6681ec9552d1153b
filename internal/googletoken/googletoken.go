// Package googletoken holds the one rule for a Google access token that
// cannot be had, for the wires that send with one (provider/vertex,
// provider/googlecloud): a failure is final (provider.Final) unless it is
// known to pass (Passing) — the token endpoint or the metadata server
// answering 5xx, 408 or 429, or the HTTP client failing in a way another
// ask may mend (the network, an HTTP/2 stream reset, a proxy's 5xx) —
// since asking again for anything else (a refusal, a bad key file, a
// token endpoint that answers no token, a metadata server's 403, a
// certificate that does not verify, a host not found) only gets the same
// failure again. Context gives the token sources of the application
// default credentials an HTTP client with a timeout (AskTimeout). A passing failure stays an error the request is
// retried for, by the wire's sender and the agent, as a send's own blip
// is: golang.org/x/oauth2 does not retry a token's fetch itself.
//
// It must not fetch, cache or change a token itself (its token sources
// do), nor read a credential, nor replace an HTTP client a caller gave.
package googletoken

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync/atomic"
	"syscall"
	"time"

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
// (*metadata.Error), a failure of the HTTP client itself (a *url.Error in
// the chain, or the same flattened into text: a connection refused or
// reset, a name server failing, a timeout, a connection closed early, an
// HTTP/2 stream reset or GOAWAY, a proxy's CONNECT answered 5xx), the
// turn's own cancel (its sender ends the request for it), or the same in
// the words x/oauth2 flattens them into where it keeps no type. Anything
// else is not: a refusal, the metadata server's 403 or its 404
// (metadata.NotDefinedError), a key that cannot be read, an answer that
// is no token, and among the HTTP client's own failures those that
// asking again cannot mend (clientFinal): a certificate that does not
// verify, a host name that does not exist, a URL that is malformed or of
// a scheme net/http does not speak, a proxy refusing the CONNECT (407,
// 403).
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
	if errors.Is(err, context.Canceled) {
		return true
	}
	if clientFinal(err) || finalText(err.Error()) {
		return false
	}
	var ue *url.Error
	if network(err) || errors.As(err, &ue) {
		return true
	}
	return passingText(err.Error())
}

func passingStatus(status int) bool {
	return status >= 500 || status == http.StatusRequestTimeout || status == http.StatusTooManyRequests
}

// clientFinal reports whether err's chain holds, by its type, a failure
// of the HTTP client that asking again cannot mend: a host name that does
// not exist (as provider/bedrock/internal/awscall treats NXDOMAIN: a
// mistyped host), a certificate that does not verify, a URL that does not
// parse.
func clientFinal(err error) bool {
	var dns *net.DNSError
	if errors.As(err, &dns) && dns.IsNotFound {
		return true
	}
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	if errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci) {
		return true
	}
	var ue *url.Error
	return errors.As(err, &ue) && ue.Op == "parse" || errors.Is(err, http.ErrSchemeMismatch)
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

// AskTimeout bounds each HTTP request of a token source built in a
// context from Context: the token endpoint's, the Secure Token Service's,
// impersonation's, an external account's subject token's. A token is one
// small request that Google's endpoints answer in well under a second,
// and a dial, a TLS handshake and a slow proxy fit in it many times;
// without a bound (x/oauth2's default, http.DefaultClient) an endpoint
// that takes the connection and never answers holds a caching source's
// (oauth2.ReuseTokenSource's) lock for ever, every later ask queued
// behind it, and the process never gets a token again. The metadata
// server's asks are compute/metadata's own, bounded by its client's 5 s.
const AskTimeout = 30 * time.Second

// Context is ctx carrying, for x/oauth2's token sources built in it
// (google.FindDefaultCredentials), an HTTP client whose requests end
// after AskTimeout; a ctx that carries its client already (its
// oauth2.HTTPClient value) is returned as it is, the caller's client kept.
// It must not be used for credentials a caller built: those keep theirs.
func Context(ctx context.Context) context.Context {
	if d := testTimeout.Load(); d != nil {
		return withTimeout(ctx, *d)
	}
	return withTimeout(ctx, AskTimeout)
}

// testTimeout, when set (TimeoutForTests), is Context's bound in place of
// AskTimeout.
var testTimeout atomic.Pointer[time.Duration]

// TimeoutForTests makes Context bound each token request by d, until
// restore is called (which gives back the setting before): a wire's test
// that a token endpoint never answering does not hold it need not wait
// AskTimeout. It is for tests only, in a test that does not run in
// parallel with another; a wire's own code must not call it.
func TimeoutForTests(d time.Duration) (restore func()) {
	previous := testTimeout.Swap(&d)
	return func() { testTimeout.Store(previous) }
}

// withTimeout is Context with the bound d (a test's shorter one).
func withTimeout(ctx context.Context, d time.Duration) context.Context {
	if c, ok := ctx.Value(oauth2.HTTPClient).(*http.Client); ok && c != nil {
		return ctx
	}
	return context.WithValue(ctx, oauth2.HTTPClient, &http.Client{Timeout: d})
}

// Within is ts's token, or ctx's error as soon as ctx ends before ts
// answers: x/oauth2's token sources take no context, and a token
// endpoint that takes the connection and never answers would otherwise
// hold a turn the user cancelled. The ask goes on, on its own goroutine,
// until ts returns: bounded by its HTTP client's timeout (AskTimeout for
// a source built in a context from Context, for each of its requests),
// or not at all without one — an ask queued behind another on a caching
// source's lock waits that one's bound too; its result is then dropped,
// but a token a caching source (oauth2.ReuseTokenSource) got is kept for
// the next ask. With a ctx
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
