package ratelimit

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// This file reads one response into an Observation. What each wire says,
// and where it is read from, is in docs/ratelimits.md; in short:
//
//   - Anthropic (and Claude on Google Cloud's gateway and Vertex, which
//     answer as Anthropic does): anthropic-ratelimit-{requests,tokens,
//     input-tokens,output-tokens}-{limit,remaining,reset}, the reset an
//     RFC 3339 time; retry-after; the error body's type (rate_limit_error,
//     overloaded_error, api_error), also as a stream's error event.
//   - OpenAI (Chat Completions and Responses):
//     x-ratelimit-{limit,remaining,reset}-{requests,tokens}, the reset a Go
//     style duration ("6m0s", "1s", "20ms"); retry-after-ms; retry-after;
//     the error body's type and code (rate_limit_exceeded,
//     insufficient_quota, server_error).
//   - Gemini and Vertex: Google's error body, its status
//     (RESOURCE_EXHAUSTED, UNAVAILABLE, INTERNAL) and the retryDelay of a
//     google.rpc.RetryInfo in its details.
//   - Bedrock: the x-amzn-errortype header (or the body's __type):
//     ThrottlingException, ServiceUnavailableException,
//     ModelNotReadyException, InternalServerException; inside a stream,
//     the same names with a lower-case first letter, as the anthropic
//     wire reads them into an error event's type.
//
// The header families are read on every wire — their names do not
// collide, and a server behind the openai wire may well send Anthropic's
// or OpenAI's — and so is every body shape. A value that cannot be read
// (not a number, a negative count, a time that does not parse) is taken
// as unsaid, never as 0, and never panics.

// maxBody is the largest body FromResponse reads: an error body is a few
// hundred bytes; a larger one is an answer, which says nothing of limits.
const maxBody = 64 << 10

// FromResponse reads what one response of wire (provider.WireName's name:
// "anthropic", "openai", "openai-responses", "gemini", "bedrock",
// "vertex", "google-cloud") says of its limits: status is its HTTP status
// (0 for an error event read from inside a stream), h its headers, body
// its error body or a stream's error event (nil when there is none), now
// the time it was read, which relative values count from. The wire names
// the response in Why (Observation.From); every header family and error
// body is read alike whatever the wire (docs/ratelimits.md).
func FromResponse(wire string, status int, h http.Header, body []byte, now time.Time) Observation {
	o := Observation{At: now, From: wire, Status: status}
	wait, headerSaid := headerRetryAfter(h, now)
	o.RetryAfter = wait
	o.Requests = anthropicDimension(h, "requests", now).or(openAIDimension(h, "requests", now))
	o.Tokens = anthropicDimension(h, "tokens", now).or(openAIDimension(h, "tokens", now))
	o.InputTokens = anthropicDimension(h, "input-tokens", now)
	o.OutputTokens = anthropicDimension(h, "output-tokens", now)

	e := readError(h, body)
	if !headerSaid && e.retryDelay > 0 {
		// A header says it first, even when it says 0.
		o.RetryAfter = e.retryDelay
	}
	o.Error = e.name()
	o.classify(e)
	return o
}

// classify sets Limited, QuotaSpent, Overloaded and ServerFault from the
// status and the error the response named.
func (o *Observation) classify(e wireError) {
	aws := e.aws
	if aws == "" {
		aws = streamException(e.typ)
	}
	switch aws {
	case "ThrottlingException":
		o.Limited = true
	case "ServiceUnavailableException", "ModelNotReadyException":
		// A model not ready comes as a 429 on Bedrock, but it says the
		// model is not serving, not that the key asked too much.
		o.Overloaded = true
	case "InternalServerException":
		o.ServerFault = true
	}
	switch e.google {
	case "RESOURCE_EXHAUSTED":
		o.Limited = true
	case "UNAVAILABLE":
		o.Overloaded = true
	case "INTERNAL":
		o.ServerFault = true
	}
	switch {
	case e.typ == "rate_limit_error" || e.code == "rate_limit_exceeded":
		o.Limited = true
	case e.typ == "insufficient_quota" || e.code == "insufficient_quota":
		o.Limited, o.QuotaSpent = true, true
	case e.typ == "overloaded_error" || e.code == "server_is_overloaded":
		// server_is_overloaded: OpenAI's Responses API's error event
		// when its servers are overloaded, inside a stream of 200
		o.Overloaded = true
	case e.typ == "api_error" || e.typ == "server_error" || e.code == "server_error":
		// server_error: OpenAI's fault of its own in an error object
		// with no status to say so (a stream's error chunk, the
		// Responses API's error event or failed response)
		o.ServerFault = true
	}
	switch {
	case o.Status == http.StatusTooManyRequests && !o.Overloaded:
		o.Limited = true
	case o.Status == 529 || o.Status == http.StatusServiceUnavailable:
		o.Overloaded = true
	case o.Status >= 500 && o.Status <= 599 && !o.Overloaded:
		o.ServerFault = true
	}
	if o.Overloaded || o.Limited {
		o.ServerFault = false
	}
}

// or is d, or, when d says nothing, other.
func (d Dimension) or(other Dimension) Dimension {
	if d == (Dimension{}) {
		return other
	}
	return d
}

// anthropicDimension reads anthropic-ratelimit-<name>-{limit,remaining,reset}.
func anthropicDimension(h http.Header, name string, now time.Time) Dimension {
	p := "anthropic-ratelimit-" + name + "-"
	d := counts(header(h, p+"limit"), header(h, p+"remaining"))
	if v := header(h, p+"reset"); v != "" {
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			d.Reset = boundTime(t, now)
		}
	}
	return d
}

// openAIDimension reads x-ratelimit-{limit,remaining,reset}-<name>, the
// reset a duration from now.
func openAIDimension(h http.Header, name string, now time.Time) Dimension {
	d := counts(header(h, "x-ratelimit-limit-"+name), header(h, "x-ratelimit-remaining-"+name))
	if wait, ok := parseWait(header(h, "x-ratelimit-reset-"+name)); ok {
		d.Reset = now.Add(wait)
	}
	return d
}

func counts(limit, remaining string) Dimension {
	var d Dimension
	d.Limit, d.HasLimit = count(limit)
	d.Remaining, d.HasRemaining = count(remaining)
	return d
}

// count reads a count: a whole number, not negative.
func count(v string) (int64, bool) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// headerRetryAfter reads retry-after-ms (milliseconds, OpenAI's), then
// retry-after (seconds, or an HTTP date counted from now; a date already
// past asks for no wait). A negative or unreadable value is unsaid; a
// value beyond MaxWait is MaxWait.
func headerRetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if ms, ok := number(header(h, "retry-after-ms")); ok {
		return seconds(ms / 1000), true
	}
	v := header(h, "retry-after")
	if v == "" {
		return 0, false
	}
	if s, ok := number(v); ok {
		return seconds(s), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, boundTime(t, now).Sub(now)), true
	}
	return 0, false
}

// parseWait reads a wait as OpenAI writes its resets and Google its
// retryDelay: a Go-style duration ("6m0s", "1.5s", "20ms"), or a bare
// number of seconds as some compatible servers write it. Negative or
// unreadable is unsaid; beyond MaxWait is MaxWait.
func parseWait(v string) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, ok := number(v); ok {
		return seconds(s), true
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, false
	}
	return min(d, MaxWait), true
}

// number reads a finite, non-negative decimal number.
func number(v string) (float64, bool) {
	if v == "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return 0, false
	}
	return f, true
}

// seconds is s seconds as a duration, at most MaxWait (compared before
// converting, so that no value overflows).
func seconds(s float64) time.Duration {
	if s >= MaxWait.Seconds() {
		return MaxWait
	}
	return time.Duration(s * float64(time.Second))
}

// boundTime is t, or now+MaxWait when t is further off.
func boundTime(t, now time.Time) time.Time {
	if limit := now.Add(MaxWait); t.After(limit) {
		return limit
	}
	return t
}

// header is h's first value of name (given in lower case) however the
// map's key is cased: canonical (http.Header.Set's, net/http's reading)
// or as it came (an HTTP/2 field, a map built by hand).
func header(h http.Header, name string) string {
	if v := h.Get(name); v != "" {
		return strings.TrimSpace(v)
	}
	for k, vs := range h {
		if len(vs) > 0 && strings.EqualFold(k, name) {
			return strings.TrimSpace(vs[0])
		}
	}
	return ""
}

// wireError is what a response's error names: Anthropic's and OpenAI's
// type and code, Google's status and RetryInfo, Bedrock's error type.
type wireError struct {
	typ, code, google, aws string
	retryDelay             time.Duration
}

// name is the error's name for Observation.Error: the most specific the
// response gave.
func (e wireError) name() string {
	for _, n := range []string{e.aws, e.google, e.code, e.typ} {
		if n != "" {
			return n
		}
	}
	return ""
}

// errorBody is the union of the wires' error bodies:
//
//	Anthropic {"type":"error","error":{"type":"rate_limit_error","message":...}}
//	OpenAI    {"error":{"message":...,"type":"requests","code":"rate_limit_exceeded"}}
//	Google    {"error":{"code":429,"message":...,"status":"RESOURCE_EXHAUSTED","details":[...]}}
//	Bedrock   {"message":...} (the type in x-amzn-errortype), or with "__type"
type errorBody struct {
	Error   json.RawMessage `json:"error"`
	AWSType string          `json:"__type"`
}

type errorObject struct {
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
	Status  string          `json:"status"`
	Details []struct {
		Type       string `json:"@type"`
		RetryDelay string `json:"retryDelay"`
	} `json:"details"`
}

const retryInfo = "type.googleapis.com/google.rpc.RetryInfo"

// readError reads the error a response names, from Bedrock's header and
// from the body when it is small enough to be an error. A body that is not
// one of the shapes above names nothing.
func readError(h http.Header, body []byte) wireError {
	var e wireError
	e.aws = awsErrorType(header(h, "x-amzn-errortype"))
	body = bytes.TrimSpace(body)
	if len(body) == 0 || len(body) > maxBody {
		return e
	}
	if body[0] == '[' {
		// Gemini's streamGenerateContent without SSE answers an error
		// as a one-element array.
		var list []json.RawMessage
		if json.Unmarshal(body, &list) != nil || len(list) == 0 {
			return e
		}
		body = list[0]
	}
	var b errorBody
	if json.Unmarshal(body, &b) != nil {
		return e
	}
	if e.aws == "" {
		e.aws = awsErrorType(b.AWSType)
	}
	var obj errorObject
	if len(b.Error) == 0 || json.Unmarshal(b.Error, &obj) != nil {
		return e
	}
	e.typ, e.google = obj.Type, obj.Status
	var code string
	if json.Unmarshal(obj.Code, &code) == nil {
		e.code = code // OpenAI's; Google's code is the HTTP status, a number
	}
	for _, d := range obj.Details {
		if d.Type == retryInfo {
			if wait, ok := parseWait(d.RetryDelay); ok {
				e.retryDelay = wait
			}
		}
	}
	return e
}

// streamException is the AWS error type an Anthropic-shaped error event
// of type typ names: Bedrock's event stream sends its exceptions in a
// frame named with the first letter in lower case (throttlingException,
// serviceUnavailableException, internalServerException), which the
// anthropic wire reads as an error event of that type; "" for any other
// type. Observation.Error keeps the name as the stream gave it.
func streamException(typ string) string {
	if len(typ) < 2 || !strings.HasSuffix(typ, "Exception") || typ[0] < 'a' || typ[0] > 'z' {
		return ""
	}
	return strings.ToUpper(typ[:1]) + typ[1:]
}

// awsErrorType is the error's name in an x-amzn-errortype header or a
// body's __type: "ThrottlingException:http://internal.amazon.com/..." or
// "com.amazon.bedrock#ThrottlingException" name ThrottlingException.
func awsErrorType(v string) string {
	if i := strings.IndexByte(v, ':'); i >= 0 {
		v = v[:i]
	}
	if i := strings.LastIndexByte(v, '#'); i >= 0 {
		v = v[i+1:]
	}
	return strings.TrimSpace(v)
}
