package googletoken

import (
	"net/http"
	"strconv"
	"strings"
)

// passingText reports whether msg, an error x/oauth2 flattened with %v
// (losing its type), says a passing status, a passing RFC 6749 error
// code, a failure of the HTTP client itself (net/http's *url.Error,
// written `Post "URL": ...`), a network failure, or an AWS instance
// metadata service that is throttling or failing. finalText is asked
// first.
func passingText(msg string) bool {
	if status, ok := statusInText(msg); ok {
		return passingStatus(status)
	}
	for _, code := range []string{"temporarily_unavailable", "server_error"} {
		// RFC 6749 §5.2's codes for a server that cannot answer now:
		// token.go's RetrieveError.Error keeps the code, not the status
		// (impersonate.go flattens it with %v)
		if strings.Contains(msg, `oauth2: "`+code+`"`) {
			return true
		}
	}
	for _, op := range []string{`Post "`, `Get "`, `Put "`} {
		// net/http's *url.Error flattened (internal/token.go's
		// "oauth2: cannot fetch token: %v", impersonate.go's,
		// sts_exchange.go's, urlcredsource.go's, aws.go's): the HTTP
		// client failed, and finalText has taken out the failures that
		// asking again cannot mend
		if i := strings.Index(msg, op); i >= 0 {
			// impersonate.go asks its source through an oauth2.Transport:
			// the source's own failure is written after the URL, and is
			// passing only if it passes on its own
			rest := msg[i+len(op):]
			if j := strings.Index(rest, `": `); j >= 0 && strings.HasPrefix(rest[j+3:], "oauth2") {
				return passingText(rest[j+3:])
			}
			return true
		}
	}
	for _, words := range networkWords {
		if strings.Contains(msg, words) {
			return true
		}
	}
	if awsIMDSPassing(msg) {
		return true
	}
	// net/http's *url.Error for a connection the server closed before
	// answering ("Post \"URL\": EOF"), or a body's read cut short
	return strings.HasSuffix(msg, ": EOF")
}

// finalText reports whether msg says one of the HTTP client's failures
// that asking again cannot mend (clientFinal's, in words), or the
// metadata server's 404 (metadata.NotDefinedError's text) flattened into
// another error.
func finalText(msg string) bool {
	for _, words := range clientFinalWords {
		if strings.Contains(msg, words) {
			return true
		}
	}
	return strings.Contains(msg, "metadata: GCE metadata ") && strings.Contains(msg, " not defined")
}

// clientFinalWords are the words of an HTTP client's failure that asking
// again cannot mend, as net, net/http, crypto/tls and crypto/x509 write
// them.
var clientFinalWords = []string{
	"no such host",                              // net's DNSError, IsNotFound: a mistyped host
	"x509: ",                                    // a certificate that does not verify
	"tls: failed to verify",                     // crypto/tls's CertificateVerificationError
	"unsupported protocol scheme",               // net/http/transport.go
	`parse "`,                                   // net/url's *url.Error, Op "parse"
	"missing protocol scheme",                   // net/url
	"stopped after 10 redirects",                // net/http's client.go: a redirect loop
	"server gave HTTP response to HTTPS client", // net/http's ErrSchemeMismatch, flattened
	`": Proxy Authentication Required`,          // net/http/transport.go: the proxy's CONNECT answered 407, its status text only
	`": Forbidden`,                              // the same, 403
	// an answer that is no token, the words of x/oauth2 v0.36.0's
	// internal/token.go, flattened under net/http's `Post "URL": ` by
	// impersonate.go when impersonation's source got it
	"server response missing access_token",
	"cannot parse json",
	"invalid character",            // encoding/json, or a URL's host net/url refused
	"unexpected end of JSON input", // encoding/json
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
	"deadline exceeded",                     // net/http's Client.Timeout, a context's
	"Client.Timeout exceeded",               // net/http's Client.Timeout
	"TLS handshake timeout",                 // net/http/transport.go
	"timeout awaiting response",             // net/http/transport.go
	"server misbehaving",                    // net's DNSError, a name server failing
	"network is unreachable",                // syscall.ENETUNREACH
	"no route to host",                      // syscall.EHOSTUNREACH
	"server closed idle connection",         // net/http/transport.go
	"transport connection broken",           // net/http/transport.go
	"http2: server sent GOAWAY",             // net/http's http2GoAwayError
	"stream error: stream ID",               // net/http's http2StreamError (RST_STREAM)
	"http2: client connection lost",         // net/http's http2 transport
	"http2: client connection force closed", // net/http's http2 transport
}

// awsIMDSPassing reports whether msg is x/oauth2 v0.36.0's
// google/externalaccount/aws.go failing to get an AWS-sourced external
// account's role name, credentials, region or IMDSv2 session token
// (aws.go:426, 469, 538, 571: "unable to retrieve AWS ... - " and the
// answer's body, its status dropped) with a body that says the instance
// metadata service is throttling (429) or failing (5xx). Another body (a
// 404's: no role attached) is final.
func awsIMDSPassing(msg string) bool {
	i := strings.Index(msg, "oauth2/google/externalaccount: unable to retrieve AWS ")
	if i < 0 {
		return false
	}
	body := strings.ToLower(msg[i:])
	for _, words := range []string{"throttl", "too many requests", "service unavailable", "internal server error", "bad gateway", "gateway timeout"} {
		if strings.Contains(body, words) {
			return true
		}
	}
	return false
}

// statusInText is the status x/oauth2 v0.36.0 wrote into msg where it
// keeps no type: google/internal/stsexchange/sts_exchange.go and
// google/internal/impersonate/impersonate.go ("oauth2/google: status
// code 400: ..."), google/externalaccount/urlcredsource.go
// ("oauth2/google/externalaccount: status code 401: ..."), a
// *metadata.Error's ("compute: Received 403 `...`") or a
// *oauth2.RetrieveError's text flattened into another's with %v by
// google/internal/impersonate/impersonate.go (its source credentials
// refused: "oauth2/google: unable to generate access token: ...: oauth2:
// \"invalid_grant\" ..." — token.go's RetrieveError.Error with an RFC
// 6749 §5.2 code, a refusal (400) — or "oauth2: cannot fetch token: 400
// Bad Request", token.go's without one).
func statusInText(msg string) (int, bool) {
	for _, code := range []string{"invalid_request", "invalid_client", "invalid_grant", "unauthorized_client", "unsupported_grant_type", "invalid_scope", "access_denied"} {
		if strings.Contains(msg, `oauth2: "`+code+`"`) {
			return http.StatusBadRequest, true
		}
	}
	for _, prefix := range []string{"oauth2: cannot fetch token: ", "compute: Received "} {
		i := strings.Index(msg, prefix)
		if i < 0 {
			continue
		}
		rest := msg[i+len(prefix):]
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
