package anthropic

import (
	"net/http"
	"time"

	"github.com/myelin-run/myelin/internal/send"
)

// Every request of the wire is posted by internal/send: streamed or whole
// (NoStream), on Anthropic's own API and on every platform. The method,
// URL and headers are those anthropic-sdk-go built for the same call
// (target.go), the retries are its rules (send.Anthropic), and an error
// answer is made an *Error as the SDK made its own (apierror.go), so that
// describe reads what it read. On a platform each attempt is given to
// the platform's Send (Bedrock, Vertex: route and sign) or Authorize
// (Google Cloud: its token). TestTheWireSendsWhatTheSDKSends and
// TestRetriesAreTheSDKs hold the two to the same requests, and each
// platform's tests hold its requests to the SDK's middleware's.

// path is the Messages endpoint, under the base URL.
const path = "v1/messages"

// connection is what a Provider's Senders are made from, kept so that
// WithThinking can make them again with another thinking's betas.
type connection struct {
	spec       targetSpec // the targets' parts but the betas and whole
	httpClient *http.Client
	retries    int    // before any output; bounded by cfg.RetryFor when set
	wire       string // the limiter's name of the wire: "anthropic", a platform's
	identity   string // the limiter's identity of the account
	// sentBetas: the thinking's betas go in the header (false on a
	// platform that takes them in the body)
	sentBetas bool
}

// senders are the Senders of c's requests asking for th, per cfg: the
// streamed requests' (retried by cfg.RetryFor when set, else by
// c.retries) and the whole answers' (NoStream: the same, but with
// cfg.RetryFor set never retried by the wire: the agent's resend within
// RetryFor is then their one retry policy, docs/ratelimits.md "Retries",
// as it was when the SDK sent them; each attempt bounded by the ten
// minutes the SDK gave it, wholeAttempt).
func (c connection) senders(cfg Config, th Thinking) (stream, whole *send.Sender, err error) {
	spec := c.spec
	if c.sentBetas {
		spec.betas = th.betas()
	}
	t, err := messagesTarget(spec)
	if err != nil {
		return nil, nil, err
	}
	spec.whole = true
	w, err := messagesTarget(spec)
	if err != nil {
		return nil, nil, err
	}
	rules := send.Anthropic(c.retries)
	rules.For = cfg.RetryFor
	stream = c.sender(t, rules, cfg)
	rules.For, rules.AttemptTimeout = 0, wholeAttempt
	if cfg.RetryFor > 0 {
		rules.MaxRetries = 0
	}
	return stream, c.sender(w, rules, cfg), nil
}

// wholeAttempt is how long an attempt of a whole answer may take, its
// answer read: what anthropic-sdk-go gave a Messages.New call whose
// max_tokens it did not see (the body was the wire's), and what the
// X-Stainless-Timeout header of such a request says (wholeTimeout).
const wholeAttempt = 10 * time.Minute

// sender is the Sender of t's requests through c's HTTP client, with
// rules (anthropic-sdk-go's) and, with cfg.Limiter, every attempt waiting
// at the limiter under c's wire and identity (docs/ratelimits.md).
func (c connection) sender(t send.Target, rules send.Rules, cfg Config) *send.Sender {
	return send.New(t, c.httpClient, rules, refusalError).WithLimiter(cfg.Limiter, c.wire, c.identity)
}
