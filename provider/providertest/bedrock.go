package providertest

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// This file is the fake's Amazon Bedrock: Claude's Messages API behind
// InvokeModel and InvokeModelWithResponseStream, as anthropic-sdk-go's
// bedrock package calls them and as the Bedrock documentation describes
// them. The model is in the path; the body is the Messages API's less
// "model" and "stream", with "anthropic_version"; the answer is the
// Messages API's JSON, or — streamed — the AWS event stream: binary
// frames whose "chunk" events carry {"bytes": base64 of one of the API's
// events}. Errors are Bedrock's REST JSON, {"message": "..."}, with the
// exception's name in x-amzn-ErrorType.

// NewBedrock starts a fake Bedrock runtime. A request it takes must be a
// POST to /model/MODEL/invoke or /model/MODEL/invoke-with-response-stream,
// carry an AWS SigV4 or bearer Authorization, and have a body with
// "anthropic_version" and without "model" or "stream" (Bedrock refuses
// extraneous keys): one that does not is refused as Bedrock refuses it
// (404, 403, 400 ValidationException) and still takes its step. Steps work
// as on NewAnthropic (CutAfter counts frames; an error Status answers with
// Bedrock's exception for it); Window refuses with a 400 whose message is
// Bedrock's wrapping of the API's ("The model returned the following
// errors: prompt is too long: N tokens > W maximum").
func NewBedrock(t testing.TB, steps ...Step) *Server { return start(t, "bedrock", steps) }

// bedrockPath is the path of InvokeModel and of its streaming twin.
var bedrockPath = regexp.MustCompile(`^/model/([^/]+)/(invoke|invoke-with-response-stream)$`)

// bedrockErrors are the exceptions Bedrock names for a status.
var bedrockErrors = map[int]string{
	400: "ValidationException",
	403: "AccessDeniedException",
	404: "ResourceNotFoundException",
	408: "ModelTimeoutException",
	424: "ModelErrorException",
	429: "ThrottlingException",
	500: "InternalServerException",
	503: "ServiceUnavailableException",
}

func (s *Server) answerBedrock(w http.ResponseWriter, r *http.Request, body []byte, step Step) {
	m := bedrockPath.FindStringSubmatch(r.URL.EscapedPath())
	switch {
	case r.Method != http.MethodPost || m == nil:
		bedrockError(w, http.StatusNotFound, "UnknownOperationException", "")
		return
	case !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=") && !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer "):
		bedrockError(w, http.StatusForbidden, "AccessDeniedException", "Missing Authentication Token")
		return
	}
	if problem := bodyProblem(body, "model", "stream"); problem != "" {
		bedrockError(w, http.StatusBadRequest, "ValidationException", "Malformed input request: "+problem+", please reformat your input and try again.")
		return
	}
	stream := m[2] == "invoke-with-response-stream"
	if step.Status != 0 && step.Status != http.StatusOK {
		w.Header().Set("retry-after-ms", "5") // as the Anthropic fake: retries in tests stay quick
		name := bedrockErrors[step.Status]
		if name == "" {
			name = "InternalServerException"
		}
		msg := step.ErrorMessage
		if msg == "" {
			msg = http.StatusText(step.Status)
		}
		bedrockError(w, step.Status, name, msg)
		return
	}
	contentType := "application/json"
	if stream {
		contentType = "application/vnd.amazon.eventstream"
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("x-amzn-RequestId", "providertest")
	if step.Raw != "" {
		io.WriteString(w, step.Raw)
		if step.Cut {
			cut(w)
		}
		return
	}
	if !stream {
		io.WriteString(w, anthropicMessage(step))
		return
	}
	frames := bedrockFrames(step)
	if step.CutAfter > 0 {
		frames = frames[:min(step.CutAfter, len(frames))]
	}
	for _, f := range frames {
		w.Write(f)
	}
	if step.CutAfter > 0 {
		endCut(w, step)
	}
}

// bodyProblem says what a platform refuses in a body: one that is not a
// JSON object, lacks anthropic_version, or has one of the keys the
// platform takes in the URL; "" when it is fine.
func bodyProblem(body []byte, moved ...string) string {
	var v map[string]json.RawMessage
	if err := json.Unmarshal(body, &v); err != nil {
		return "the body is not a JSON object"
	}
	for _, k := range moved {
		if _, ok := v[k]; ok {
			return fmt.Sprintf("#: extraneous key [%s] is not permitted", k)
		}
	}
	if _, ok := v["anthropic_version"]; !ok {
		return "#: required key [anthropic_version] not found"
	}
	return ""
}

func bedrockError(w http.ResponseWriter, status int, name, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("x-amzn-ErrorType", name)
	w.WriteHeader(status)
	if msg == "" {
		io.WriteString(w, `{}`)
		return
	}
	io.WriteString(w, mustJSON(map[string]any{"message": msg}))
}

// bedrockRefusal is Bedrock's body for a request over the window: the
// Messages API's own words, passed on in a ValidationException.
func bedrockRefusal(window, tokens, room int) string {
	msg := fmt.Sprintf("prompt is too long: %d tokens > %d maximum", tokens, window)
	if tokens <= window {
		msg = fmt.Sprintf("input length and `max_tokens` exceed context limit: %d + %d > %d, decrease input length or `max_tokens` and try again", tokens, room, window)
	}
	return mustJSON(map[string]any{"message": "The model returned the following errors: " + msg})
}

// BedrockStream is a step's streamed answer as Bedrock sends it: each
// event of AnthropicStream in a "chunk" frame of the AWS event stream,
// the last (message_stop) with Bedrock's invocation metrics.
func BedrockStream(step Step) []byte {
	var out []byte
	for _, f := range bedrockFrames(step) {
		out = append(out, f...)
	}
	return out
}

func bedrockFrames(step Step) [][]byte {
	var frames [][]byte
	for _, ev := range strings.SplitAfter(AnthropicStream(step), "\n\n") {
		var data string
		for _, line := range strings.Split(ev, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				data = d
			}
		}
		if data == "" {
			continue
		}
		if strings.Contains(data, `"type":"message_stop"`) {
			data = mustJSON(map[string]any{"type": "message_stop", "amazon-bedrock-invocationMetrics": map[string]any{
				"inputTokenCount": step.Input, "outputTokenCount": step.Output, "invocationLatency": 1, "firstByteLatency": 1,
			}})
		}
		frames = append(frames, BedrockChunk([]byte(data)))
	}
	return frames
}

// BedrockChunk is one "chunk" event frame carrying an event of the
// Messages API (its JSON), base64 in "bytes" as Bedrock sends it, with the
// "p" padding Bedrock adds.
func BedrockChunk(event []byte) []byte {
	payload := mustJSON(map[string]any{"bytes": base64.StdEncoding.EncodeToString(event), "p": "abcdefghijklmnopqrstuvwxyzABCDEF"[:len(event)%32]})
	return eventFrame([][2]string{{":event-type", "chunk"}, {":content-type", "application/json"}, {":message-type", "event"}}, []byte(payload))
}

// BedrockException is an exception frame of the event stream: how
// Bedrock reports an error after the stream began (name as
// "validationException", "throttlingException", ...).
func BedrockException(name, message string) []byte {
	return eventFrame([][2]string{{":exception-type", name}, {":content-type", "application/json"}, {":message-type", "exception"}}, []byte(mustJSON(map[string]any{"message": message})))
}

// eventFrame is one message of the AWS event stream encoding: a prelude
// (total length, headers length, the prelude's CRC32), headers (name
// length, name, type 7 = string, value length, value), the payload, and
// the CRC32 of all that came before.
func eventFrame(headers [][2]string, payload []byte) []byte {
	var h []byte
	for _, kv := range headers {
		h = append(h, byte(len(kv[0])))
		h = append(h, kv[0]...)
		h = append(h, 7)
		h = binary.BigEndian.AppendUint16(h, uint16(len(kv[1])))
		h = append(h, kv[1]...)
	}
	total := 12 + len(h) + len(payload) + 4
	f := make([]byte, 0, total)
	f = binary.BigEndian.AppendUint32(f, uint32(total))
	f = binary.BigEndian.AppendUint32(f, uint32(len(h)))
	f = binary.BigEndian.AppendUint32(f, crc32.ChecksumIEEE(f))
	f = append(f, h...)
	f = append(f, payload...)
	return binary.BigEndian.AppendUint32(f, crc32.ChecksumIEEE(f))
}
