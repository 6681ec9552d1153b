package awssts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
	"github.com/myelin-run/myelin/provider/bedrock/internal/awscall"
)

// reply is one answer of the fake STS.
type reply struct {
	status int
	body   string // or "@file" for testdata/file
	hangup bool   // close the connection without answering
	// cancel, when set, is called before answering; the answer then
	// waits for the client to go away.
	cancel bool
	// skew puts the fake's clock ahead of this machine's, in its Date.
	skew time.Duration
	// age sends an Age header: the answer says it was cached.
	age bool
}

// seen is what the fake STS saw of a request, less what differs by
// nature between two clients (the time, the SDK's own amz-sdk-* headers,
// the default session name's nanoseconds).
type seen struct {
	Method, Path, ContentType string
	Form                      url.Values
	Signed                    bool
	ScopeKey, ScopeRegion     string
	ScopeService              string
	SignedHeaders             []string
	SecurityToken             string
	SessionNameDefault        string // the default session name's pattern matched, or ""
	// SignedAtServerTime: X-Amz-Date is within 2 minutes of the fake's
	// clock (this machine's plus the reply's skew, an hour when set).
	SignedAtServerTime bool
}

// fakeSTS answers with the replies in order (the last again when out)
// and records each request.
type fakeSTS struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	replies []reply
	n       int
	seen    []seen
	cancel  context.CancelFunc
}

var (
	scopeRE      = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/]+)/\d{8}/([^/]*)/([^/]*)/aws4_request, SignedHeaders=([^,]*), Signature=[0-9a-f]{64}$`)
	defaultNames = map[string]*regexp.Regexp{
		"AssumeRole":                regexp.MustCompile(`^aws-go-sdk-\d{19}$`),
		"AssumeRoleWithWebIdentity": regexp.MustCompile(`^\d{19}$`),
	}
)

func newFakeSTS(t *testing.T, replies []reply) *fakeSTS {
	f := &fakeSTS{t: t, replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeSTS) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	form, err := url.ParseQuery(string(body))
	if err != nil {
		f.t.Errorf("the body is not a form: %v: %q", err, body)
	}
	s := seen{Method: r.Method, Path: r.URL.Path, ContentType: r.Header.Get("Content-Type"), Form: form,
		SecurityToken: r.Header.Get("X-Amz-Security-Token")}
	if auth := r.Header.Get("Authorization"); auth != "" {
		m := scopeRE.FindStringSubmatch(auth)
		if m == nil {
			f.t.Errorf("Authorization %q is not SigV4", auth)
		} else {
			s.Signed, s.ScopeKey, s.ScopeRegion, s.ScopeService = true, m[1], m[2], m[3]
			for _, h := range strings.Split(m[4], ";") {
				if !strings.HasPrefix(h, "amz-sdk-") {
					s.SignedHeaders = append(s.SignedHeaders, h)
				}
			}
		}
	}
	if name := form.Get("RoleSessionName"); defaultNames[form.Get("Action")].MatchString(name) {
		s.SessionNameDefault = "default"
		form.Set("RoleSessionName", "(default)")
	}
	f.mu.Lock()
	rp := f.replies[min(f.n, len(f.replies)-1)]
	f.n++
	now := time.Now().Add(rp.skew)
	if at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date")); err == nil {
		s.SignedAtServerTime = at.Sub(now).Abs() < 2*time.Minute
	}
	f.seen = append(f.seen, s)
	f.mu.Unlock()
	switch {
	case rp.hangup:
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			f.t.Errorf("hijack: %v", err)
			return
		}
		conn.Close()
		return
	case rp.cancel:
		f.cancel()
		<-r.Context().Done()
		return
	}
	b := []byte(rp.body)
	if name, ok := strings.CutPrefix(rp.body, "@"); ok {
		if b, err = os.ReadFile(filepath.Join("testdata", name)); err != nil {
			f.t.Fatal(err)
		}
	}
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("Date", now.UTC().Format(http.TimeFormat))
	if rp.age {
		w.Header().Set("Age", "3")
	}
	w.WriteHeader(rp.status)
	w.Write(b)
}

// errorXML is STS's ErrorResponse with code and message.
func errorXML(code, message string) string {
	return `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>` + code +
		`</Code><Message>` + message + `</Message></Error><RequestId>0f0e0d0c-req</RequestId></ErrorResponse>`
}

// outcome is what one Retrieve gave.
type outcome struct {
	Creds aws.Credentials
	Err   bool
	// The smithy.APIError's code, message and fault in the error, if
	// any.
	APICode, APIMessage string
	APIFault            smithy.ErrorFault
}

func outcomeOf(c aws.Credentials, err error) outcome {
	o := outcome{Creds: c, Err: err != nil}
	var api smithy.APIError
	if errors.As(err, &api) {
		o.APICode, o.APIMessage, o.APIFault = api.ErrorCode(), api.ErrorMessage(), api.ErrorFault()
	}
	return o
}

// source is a source of credentials for AssumeRole that counts its
// calls.
type source struct {
	creds aws.Credentials
	err   error
	calls int
}

func (s *source) Retrieve(context.Context) (aws.Credentials, error) {
	s.calls++
	return s.creds, s.err
}

// parityCase is a situation run with the SDK's provider and ours.
type parityCase struct {
	name        string
	web         bool
	role        AssumeRoleOptions
	webOpts     WebIdentityOptions
	src         aws.Credentials // AssumeRole's source
	srcErr      error
	replies     []reply
	maxAttempts int
	// calls is how many Retrieves; before runs before each (i from 0)
	// with the token file's path.
	calls   int
	before  func(t *testing.T, i int, tokenFile string)
	noToken bool   // no token file
	ctx     string // "", "cancelled" (before the call), "during" (while STS answers)
	// path is added to the fake's URL to make the endpoint.
	path string
}

// secrets are the keys and tokens of the cases, which no error may
// hold.
var secrets = []string{"source/secret", "source-token", "eyJhbGciOiJSUzI1NiJ9", "token-0", "token-1",
	"wJalrXUtnFEMI", "AQoDYXdzE", "odd/secret"}

const roleARN = "arn:aws:iam::123456789012:role/demo"

var baseSource = aws.Credentials{AccessKeyID: "AKIDSOURCE", SecretAccessKey: "source/secret"}

func parityCases() []parityCase {
	ok := []reply{{status: 200, body: "@assume_role.xml"}}
	webOK := []reply{{status: 200, body: "@web_identity.xml"}}
	return []parityCase{
		{name: "assume role: success", replies: ok},
		{name: "assume role: session name, external id, duration", role: AssumeRoleOptions{RoleSessionName: "my-session", ExternalID: "ext-123", Duration: 3600 * time.Second}, replies: ok},
		{name: "assume role: source with a session token", src: aws.Credentials{AccessKeyID: "ASIASOURCE", SecretAccessKey: "s", SessionToken: "source-token"}, replies: ok},
		{name: "assume role: the source fails", srcErr: errors.New("no source"), replies: ok},
		{name: "assume role: AccessDenied is not retried", replies: []reply{{status: 403, body: errorXML("AccessDenied", "not authorized to perform sts:AssumeRole")}}},
		{name: "assume role: Throttling then success", replies: []reply{{status: 400, body: errorXML("Throttling", "Rate exceeded")}, ok[0]}},
		{name: "assume role: 500 three times gives up", replies: []reply{{status: 500, body: errorXML("InternalFailure", "oops")}}},
		{name: "assume role: 503 not XML is retried", replies: []reply{{status: 503, body: "<html>busy"}, ok[0]}},
		{name: "assume role: 501 is not retried", replies: []reply{{status: 501, body: errorXML("NotImplemented", "no")}}},
		{name: "assume role: 429 without a throttling code is not retried", replies: []reply{{status: 429, body: "slow down"}}},
		{name: "assume role: 429 Throttling is retried", replies: []reply{{status: 429, body: errorXML("ThrottlingException", "slow")}, ok[0]}},
		{name: "assume role: IDPCommunicationError is retried", replies: []reply{{status: 400, body: errorXML("IDPCommunicationError", "idp")}, ok[0]}},
		{name: "assume role: idpcommunicationerror in another case is not", replies: []reply{{status: 400, body: errorXML("idpcommunicationerror", "idp")}, ok[0]}},
		{name: "assume role: InvalidIdentityToken is not retried", replies: []reply{{status: 400, body: errorXML("InvalidIdentityToken", "bad")}, ok[0]}},
		{name: "assume role: an error with an empty body", replies: []reply{{status: 400}}},
		{name: "assume role: expiredtokenexception is spelled as its type", replies: []reply{{status: 400, body: errorXML("expiredtokenexception", "expired")}}},
		{name: "assume role: REGIONDISABLEDEXCEPTION is spelled as its type", replies: []reply{{status: 403, body: errorXML("REGIONDISABLEDEXCEPTION", "off")}}},
		{name: "assume role: a typed code without a message has none", replies: []reply{{status: 400, body: errorXML("MalformedPolicyDocument", "")}}},
		{name: "assume role: an untyped code without a message has the code for one", replies: []reply{{status: 400, body: errorXML("accessdenied", "")}}},
		{name: "assume role: a Receiver error of no type is of unknown fault", replies: []reply{{status: 400, body: strings.Replace(errorXML("Weird", "w"), "Sender", "Receiver", 1)}}},
		{name: "assume role: idprejectedclaim, typed only for web identity, is kept as sent", replies: []reply{{status: 400, body: errorXML("idprejectedclaim", "no")}}},
		{name: "assume role: max attempts 5", maxAttempts: 5, replies: []reply{{status: 502, body: errorXML("BadGateway", "x")}}},
		{name: "assume role: max attempts 1", maxAttempts: 1, replies: []reply{{status: 502, body: errorXML("BadGateway", "x")}, ok[0]}},
		{name: "assume role: an answer that is not XML", replies: []reply{{status: 200, body: "this is not xml"}}},
		{name: "assume role: an empty answer", replies: []reply{{status: 200}}},
		{name: "assume role: an answer without credentials", replies: []reply{{status: 200, body: "@no_credentials.xml"}}},
		{name: "assume role: an answer without the result", replies: []reply{{status: 200, body: "<AssumeRoleResponse><Other/></AssumeRoleResponse>"}}},
		{name: "assume role: an unreadable expiration", replies: []reply{{status: 200, body: "@bad_expiration.xml"}}},
		{name: "assume role: element names in any case", replies: []reply{{status: 200, body: "@odd_case.xml"}}},
		{name: "assume role: an answer cut after the result", replies: []reply{{status: 200, body: "@truncated_after_result.xml"}}},
		{name: "assume role: a repeated member keeps its last value, a repeated Credentials is merged", replies: []reply{{status: 200, body: "@repeated_members.xml"}}},
		{name: "assume role: an empty member after a value empties it", replies: []reply{{status: 200, body: "@empty_member_after_value.xml"}}},
		{name: "assume role: a member holding an element fails", replies: []reply{{status: 200, body: "@member_holding_an_element.xml"}}},
		{name: "assume role: a member holding a comment fails", replies: []reply{{status: 200, body: "@member_holding_a_comment.xml"}}},
		{name: "assume role: text, comments and unknown elements between members are passed over", replies: []reply{{status: 200, body: "@comments_between_members.xml"}}},
		{name: "assume role: a bad Expiration fails though a good one follows", replies: []reply{{status: 200, body: "@bad_first_expiration.xml"}}},
		{name: "assume role: a PackedPolicySize that is not a number fails", replies: []reply{{status: 200, body: "@packed_policy_size_not_a_number.xml"}}},
		{name: "assume role: an empty SessionTokenSize fails", replies: []reply{{status: 200, body: "@empty_session_token_size.xml"}}},
		{name: "assume role: a SourceIdentity holding an element fails", replies: []reply{{status: 200, body: "@source_identity_holding_an_element.xml"}}},
		{name: "assume role: an AssumedRoleId holding an element fails", replies: []reply{{status: 200, body: "@assumed_role_id_holding_an_element.xml"}}},
		{name: "assume role: an Audience holding an element is passed over", replies: []reply{{status: 200, body: "@audience_holding_an_element.xml"}}},
		{name: "assume role: CDATA alone is text, after text it fails", replies: []reply{{status: 200, body: "@cdata_in_a_member.xml"}}},
		{name: "assume role: the connection closed without an answer", replies: []reply{{hangup: true}, ok[0]}},
		{name: "assume role: the session name is kept between calls", calls: 2, replies: ok},
		{name: "assume role: SignatureDoesNotMatch with STS's clock an hour ahead is retried at its time", replies: []reply{
			{status: 403, body: errorXML("SignatureDoesNotMatch", "Signature expired"), skew: time.Hour}, {status: 200, body: "@assume_role.xml", skew: time.Hour}}},
		{name: "assume role: SignatureDoesNotMatch with STS's clock an hour behind is retried at its time", replies: []reply{
			{status: 403, body: errorXML("SignatureDoesNotMatch", "Signature expired"), skew: -time.Hour}, {status: 200, body: "@assume_role.xml", skew: -time.Hour}}},
		{name: "assume role: SignatureDoesNotMatch with the clocks agreeing is not retried", replies: []reply{
			{status: 403, body: errorXML("SignatureDoesNotMatch", "bad signature")}, ok[0]}},
		{name: "assume role: a skewed clock that STS does not complain of is not retried", replies: []reply{
			{status: 403, body: errorXML("AccessDenied", "no"), skew: time.Hour}, ok[0]}},
		{name: "assume role: STS's clock is kept for the next call", calls: 2, replies: []reply{
			{status: 403, body: errorXML("RequestTimeTooSkewed", "skewed"), skew: time.Hour}, {status: 200, body: "@assume_role.xml", skew: time.Hour}}},
		{name: "assume role: a skew in a cached answer is not retried", replies: []reply{
			{status: 403, body: errorXML("SignatureDoesNotMatch", "x"), skew: time.Hour, age: true}, ok[0]}},
		{name: "assume role: an endpoint with a path and a query", path: "/base/sts?x=1", replies: ok},
		{name: "assume role: an endpoint with a path without a slash", path: "/base", replies: ok},
		{name: "assume role: a skew STS shows that many times gives up", replies: []reply{
			{status: 403, body: errorXML("InvalidSignatureException", "x"), skew: time.Hour}, {status: 403, body: errorXML("InvalidSignatureException", "x"), skew: 2 * time.Hour},
			{status: 403, body: errorXML("InvalidSignatureException", "x"), skew: 3 * time.Hour}, ok[0]}},
		{name: "assume role: context cancelled before", ctx: "cancelled", replies: ok},
		{name: "assume role: context cancelled while STS answers", ctx: "during", replies: []reply{{cancel: true}, ok[0]}},

		{name: "web identity: success", web: true, replies: webOK},
		{name: "web identity: session name", web: true, webOpts: WebIdentityOptions{RoleSessionName: "pod-1"}, replies: webOK},
		{name: "web identity: the token file is read at each call", web: true, calls: 2, replies: webOK,
			before: func(t *testing.T, i int, file string) {
				if err := os.WriteFile(file, []byte(fmt.Sprintf("token-%d\n", i)), 0o600); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "web identity: no token file", web: true, noToken: true, replies: webOK},
		{name: "web identity: InvalidIdentityToken is retried", web: true, replies: []reply{{status: 400, body: errorXML("InvalidIdentityToken", "bad")}, webOK[0]}},
		{name: "web identity: invalididentitytoken in another case is retried", web: true, replies: []reply{{status: 400, body: errorXML("invalididentitytoken", "bad")}, webOK[0]}},
		{name: "web identity: InvalidIdentityToken three times gives up", web: true, replies: []reply{{status: 400, body: errorXML("InvalidIdentityToken", "bad")}}},
		{name: "web identity: IDPCommunicationError is retried", web: true, replies: []reply{{status: 400, body: errorXML("IDPCommunicationError", "idp")}, webOK[0]}},
		{name: "web identity: AccessDenied is not retried", web: true, replies: []reply{{status: 403, body: errorXML("AccessDenied", "no")}}},
		{name: "web identity: ExpiredTokenException is not retried", web: true, replies: []reply{{status: 400, body: errorXML("ExpiredTokenException", "expired")}}},
		{name: "web identity: idprejectedclaim is spelled as its type", web: true, replies: []reply{{status: 400, body: errorXML("idprejectedclaim", "no")}}},
		{name: "web identity: packedpolicytoolarge is spelled as its type", web: true, replies: []reply{{status: 400, body: errorXML("packedpolicytoolarge", "big")}}},
		{name: "web identity: idpcommunicationerror in another case is retried", web: true, replies: []reply{{status: 400, body: errorXML("idpcommunicationerror", "idp")}, webOK[0]}},
		{name: "web identity: IDPCOMMUNICATIONERROR three times gives up as IDPCommunicationError", web: true, replies: []reply{{status: 400, body: errorXML("IDPCOMMUNICATIONERROR", "idp")}}},
		{name: "web identity: 500 three times gives up", web: true, replies: []reply{{status: 500, body: errorXML("InternalFailure", "oops")}}},
		{name: "web identity: an answer that is not XML", web: true, replies: []reply{{status: 200, body: "{}"}}},
		{name: "web identity: an assume-role answer has not its result", web: true, replies: ok},
		{name: "web identity: an Audience holding an element fails", web: true, replies: []reply{{status: 200, body: "@audience_holding_an_element.xml"}}},
		{name: "web identity: context cancelled before", web: true, ctx: "cancelled", replies: webOK},
		{name: "web identity: AccessDeniedException with a skewed clock is retried", web: true, replies: []reply{
			{status: 400, body: errorXML("AccessDeniedException", "x"), skew: -time.Hour}, webOK[0]}},
	}
}

// runSide runs c with the SDK's provider (sdk) or ours and returns the
// outcomes of its Retrieves, what the fake saw, and how often the source
// was called.
func runSide(t *testing.T, c parityCase, sdk bool) ([]outcome, []seen, int) {
	f := newFakeSTS(t, c.replies)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if !c.noToken {
		if err := os.WriteFile(tokenFile, []byte("eyJhbGciOiJSUzI1NiJ9.e30.sig"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	src := &source{creds: c.src, err: c.srcErr}
	if src.creds == (aws.Credentials{}) {
		src.creds = baseSource
	}
	role := c.role
	role.RoleARN = roleARN
	web := c.webOpts
	web.RoleARN, web.TokenFile = roleARN, tokenFile
	maxAttempts := c.maxAttempts
	if maxAttempts == 0 {
		maxAttempts = 3
	}
	var p aws.CredentialsProvider
	if sdk {
		cfg := aws.Config{
			Region: "us-west-2", Credentials: src, HTTPClient: f.srv.Client(), BaseEndpoint: aws.String(f.srv.URL + c.path),
			Retryer: func() aws.Retryer {
				return retry.NewStandard(func(o *retry.StandardOptions) {
					o.MaxAttempts = maxAttempts
					o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
				})
			},
		}
		client := sts.NewFromConfig(cfg)
		if c.web {
			p = stscreds.NewWebIdentityRoleProvider(client, web.RoleARN, stscreds.IdentityTokenFile(tokenFile), func(o *stscreds.WebIdentityRoleOptions) {
				o.RoleSessionName = web.RoleSessionName
			})
		} else {
			p = stscreds.NewAssumeRoleProvider(client, role.RoleARN, func(o *stscreds.AssumeRoleOptions) {
				o.RoleSessionName = role.RoleSessionName
				o.Duration = role.Duration
				if role.ExternalID != "" {
					o.ExternalID = aws.String(role.ExternalID)
				}
			})
		}
	} else {
		client := Client{Client: awscall.Client{HTTPClient: f.srv.Client(), Endpoint: f.srv.URL + c.path, MaxAttempts: c.maxAttempts,
			Backoff: func(int) time.Duration { return 0 }}, SigningRegion: "us-west-2"}
		if c.web {
			p = NewWebIdentity(client, web)
		} else {
			p = NewAssumeRole(client, src, role)
		}
	}
	calls := max(c.calls, 1)
	var outs []outcome
	for i := range calls {
		if c.before != nil {
			c.before(t, i, tokenFile)
		}
		ctx, cancel := context.WithCancel(context.Background())
		f.cancel = cancel
		if c.ctx == "cancelled" {
			cancel()
		}
		creds, err := p.Retrieve(ctx)
		cancel()
		outs = append(outs, outcomeOf(creds, err))
		if !sdk && err != nil {
			t.Logf("ours: %v", err)
			for _, secret := range secrets {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error %q tells a secret, %q", err, secret)
				}
			}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return outs, slices.Clone(f.seen), src.calls
}

// TestProvidersDoWhatTheSDKsDo runs each case with stscreds' provider
// over an STS client built from a config and with ours, against the same
// fake STS, and compares the requests it saw (method, path, content
// type, form, signature scope and signed headers, session token), how
// often the source credentials were asked for, and each Retrieve's
// credentials, error-or-not and STS error code.
func TestProvidersDoWhatTheSDKsDo(t *testing.T) {
	for _, c := range parityCases() {
		t.Run(c.name, func(t *testing.T) {
			sdkOut, sdkSeen, sdkSrc := runSide(t, c, true)
			ourOut, ourSeen, ourSrc := runSide(t, c, false)
			if !reflect.DeepEqual(ourSeen, sdkSeen) {
				t.Errorf("requests:\n ours %+v\n SDK  %+v", ourSeen, sdkSeen)
			}
			if ourSrc != sdkSrc {
				t.Errorf("source credentials asked %d times, the SDK %d", ourSrc, sdkSrc)
			}
			if len(ourOut) != len(sdkOut) {
				t.Fatalf("%d outcomes, the SDK %d", len(ourOut), len(sdkOut))
			}
			for i := range ourOut {
				o, s := ourOut[i], sdkOut[i]
				if !o.Creds.Expires.Equal(s.Creds.Expires) {
					t.Errorf("call %d: expires %v, the SDK %v", i, o.Creds.Expires, s.Creds.Expires)
				}
				o.Creds.Expires, s.Creds.Expires = time.Time{}, time.Time{}
				if o != s {
					t.Errorf("call %d:\n ours %+v\n SDK  %+v", i, o, s)
				}
			}
		})
	}
}
