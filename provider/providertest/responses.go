package providertest

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// This file is the fake's OpenAI Responses API (POST /v1/responses): the
// bodies of its answers, streamed and not, its refusals and its check of
// the reasoning items a request sends back. The shapes are those of the
// SDK's types (github.com/openai/openai-go/v3/responses) and of the API's
// answers as its documentation and users' reports record them; the fake
// answers only what a step says, with ids of its own.

// responsesWire is the fake's name for the Responses API.
const responsesWire = "openai-responses"

// NewResponses starts a fake OpenAI Responses API server (its URL ends in
// /v1, as OPENAI_BASE_URL does). A step's Reasoning makes the answer start
// with a reasoning item; every request that sends a reasoning item back
// must send one this server issued, untouched, or it is refused as the API
// refuses it (400 invalid_encrypted_content).
func NewResponses(t testing.TB, steps ...Step) *Server { return start(t, responsesWire, steps) }

// encryptedPrefix starts every encrypted_content the fake issues, as
// OpenAI's do.
const encryptedPrefix = "gAAAAAB"

// Encrypted is the encrypted_content the fake issues for a reasoning
// text: the text in base64 and a checksum of it, so that the fake knows
// its own and tells a changed one; the same text gives the same bytes, so
// that two runs of a script send the same requests. It is not encryption.
func Encrypted(reasoning string) string {
	return encryptedPrefix + base64.StdEncoding.EncodeToString([]byte(reasoning)) + "." + checksum(reasoning)
}

func checksum(s string) string {
	sum := sha256.Sum256([]byte("providertest reasoning\x00" + s))
	return hex.EncodeToString(sum[:4])
}

// decrypted is the reasoning text of an encrypted_content the fake issued;
// ok is false for any other.
func decrypted(enc string) (text string, ok bool) {
	body, ok := strings.CutPrefix(enc, encryptedPrefix)
	dot := strings.LastIndexByte(body, '.')
	if !ok || dot < 0 {
		return "", false
	}
	b, err := base64.StdEncoding.DecodeString(body[:dot])
	if err != nil || checksum(string(b)) != body[dot+1:] {
		return "", false
	}
	return string(b), true
}

// responsesItems are a step's output items, whole, in order: a reasoning
// item (its summary only when the request asked for one), a message, the
// function calls.
func responsesItems(step Step, summary bool) []map[string]any {
	var items []map[string]any
	if step.Reasoning != "" {
		sum := []any{}
		if summary {
			sum = append(sum, map[string]any{"type": "summary_text", "text": step.Reasoning})
		}
		items = append(items, map[string]any{"id": "rs_test", "type": "reasoning", "summary": sum, "encrypted_content": Encrypted(step.Reasoning)})
	}
	if step.Text != "" {
		items = append(items, map[string]any{"id": "msg_test", "type": "message", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": step.Text, "annotations": []any{}}}})
	}
	for i, c := range step.ToolCalls {
		items = append(items, map[string]any{"id": fmt.Sprintf("fc_test%d", i), "type": "function_call", "status": "completed",
			"arguments": c.Input, "call_id": c.ID, "name": c.Name})
	}
	return items
}

func responsesUsage(step Step) map[string]any {
	details := map[string]any{"cached_tokens": step.CacheRead}
	if step.CacheWrite > 0 {
		details["cache_write_tokens"] = step.CacheWrite
	}
	in := step.Input + step.CacheRead + step.CacheWrite
	return map[string]any{"input_tokens": in, "input_tokens_details": details, "output_tokens": step.Output,
		"output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": in + step.Output}
}

// responsesObject is the response object: status, output and usage as
// given (usage nil while in progress).
func responsesObject(status string, output []map[string]any, usage any) map[string]any {
	if output == nil {
		output = []map[string]any{}
	}
	return map[string]any{"id": "resp_test", "object": "response", "created_at": 1, "status": status, "error": nil,
		"incomplete_details": nil, "model": "test-model", "output": output, "parallel_tool_calls": true, "store": false,
		"tool_choice": "auto", "tools": []any{}, "usage": usage}
}

// responsesFinal is the response object that ends a step's answer:
// completed, or, for a step that refuses (Step.Refuse), incomplete for
// content_filter as the API ends an answer its filter stopped.
func responsesFinal(step Step, items []map[string]any) map[string]any {
	if !step.Refuse {
		return responsesObject("completed", items, responsesUsage(step))
	}
	r := responsesObject("incomplete", items, responsesUsage(step))
	r["incomplete_details"] = map[string]any{"reason": "content_filter"}
	return r
}

// responsesBody is a step's answer, not streamed.
func responsesBody(step Step, summary bool) string {
	return mustJSON(responsesFinal(step, responsesItems(step, summary)))
}

// ResponsesStream is the event stream of a step's answer, as the API
// streams it: response.created and response.in_progress, each output item
// added, its deltas (text and reasoning summary in two deltas each,
// arguments in one), done, then response.completed with the usage. With
// summary unset, a reasoning item streams no summary.
func ResponsesStream(step Step, summary bool) string {
	var b strings.Builder
	seq := 0
	ev := func(kind string, fields map[string]any) {
		fields["type"] = kind
		fields["sequence_number"] = seq
		seq++
		sse(&b, kind, fields)
	}
	ev("response.created", map[string]any{"response": responsesObject("in_progress", nil, nil)})
	ev("response.in_progress", map[string]any{"response": responsesObject("in_progress", nil, nil)})
	items := responsesItems(step, summary)
	for i, it := range items {
		switch it["type"] {
		case "reasoning":
			ev("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{"id": it["id"], "type": "reasoning", "summary": []any{}}})
			if summary {
				part := map[string]any{"type": "summary_text", "text": ""}
				ev("response.reasoning_summary_part.added", map[string]any{"item_id": it["id"], "output_index": i, "summary_index": 0, "part": part})
				for _, d := range halves(step.Reasoning) {
					ev("response.reasoning_summary_text.delta", map[string]any{"item_id": it["id"], "output_index": i, "summary_index": 0, "delta": d})
				}
				ev("response.reasoning_summary_text.done", map[string]any{"item_id": it["id"], "output_index": i, "summary_index": 0, "text": step.Reasoning})
				ev("response.reasoning_summary_part.done", map[string]any{"item_id": it["id"], "output_index": i, "summary_index": 0,
					"part": map[string]any{"type": "summary_text", "text": step.Reasoning}})
			}
		case "message":
			ev("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{"id": it["id"], "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}})
			ev("response.content_part.added", map[string]any{"item_id": it["id"], "output_index": i, "content_index": 0, "part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
			for _, d := range halves(step.Text) {
				ev("response.output_text.delta", map[string]any{"item_id": it["id"], "output_index": i, "content_index": 0, "delta": d, "logprobs": []any{}})
			}
			ev("response.output_text.done", map[string]any{"item_id": it["id"], "output_index": i, "content_index": 0, "text": step.Text, "logprobs": []any{}})
			ev("response.content_part.done", map[string]any{"item_id": it["id"], "output_index": i, "content_index": 0, "part": map[string]any{"type": "output_text", "text": step.Text, "annotations": []any{}}})
		case "function_call":
			ev("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{"id": it["id"], "type": "function_call", "status": "in_progress", "arguments": "", "call_id": it["call_id"], "name": it["name"]}})
			ev("response.function_call_arguments.delta", map[string]any{"item_id": it["id"], "output_index": i, "delta": it["arguments"]})
			ev("response.function_call_arguments.done", map[string]any{"item_id": it["id"], "output_index": i, "arguments": it["arguments"]})
		}
		ev("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	final := responsesFinal(step, items)
	ev("response."+final["status"].(string), map[string]any{"response": final})
	return b.String()
}

// responsesRequest is the part of a request the fake reads.
type responsesRequest struct {
	Stream    bool `json:"stream"`
	Reasoning struct {
		Summary string `json:"summary"`
	} `json:"reasoning"`
	Input []json.RawMessage `json:"input"`
}

func readResponsesRequest(body []byte) responsesRequest {
	var r responsesRequest
	_ = json.Unmarshal(body, &r)
	return r
}

// badReasoning is the API's refusal of a request that sends back a
// reasoning item it did not issue, or changed ("" when there is none):
// its encrypted_content must be one the fake issued, and a summary sent
// with it must be the text it stands for.
func badReasoning(r responsesRequest) string {
	for _, raw := range r.Input {
		var it struct {
			Type      string  `json:"type"`
			Encrypted *string `json:"encrypted_content"`
			Summary   []struct {
				Text string `json:"text"`
			} `json:"summary"`
		}
		if json.Unmarshal(raw, &it) != nil || it.Type != "reasoning" {
			continue
		}
		enc := ""
		if it.Encrypted != nil {
			enc = *it.Encrypted
		}
		text, ok := decrypted(enc)
		for _, s := range it.Summary {
			ok = ok && s.Text == text
		}
		if !ok {
			short := enc
			if len(short) > 24 {
				short = short[:24] + "..."
			}
			return mustJSON(map[string]any{"error": map[string]any{
				"message": fmt.Sprintf("The encrypted content %s could not be verified. Reason: Encrypted content could not be decrypted or parsed.", short),
				"type":    "invalid_request_error", "param": nil, "code": "invalid_encrypted_content"}})
		}
	}
	return ""
}

// responsesRefusal is the API's refusal of a request over the window: the
// same words whatever the counts (it gives none).
func responsesRefusal() map[string]any {
	return map[string]any{"type": "invalid_request_error", "code": "context_length_exceeded",
		"message": "Your input exceeds the context window of this model. Please adjust your input and try again.", "param": "input"}
}

// writeResponsesRefusal answers a refused request as the API does: not
// streamed, a 400 with the error object; streamed, a 200 whose stream
// starts the response and ends with an error event.
func writeResponsesRefusal(w http.ResponseWriter, stream bool) {
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, mustJSON(map[string]any{"error": responsesRefusal()}))
		return
	}
	var b strings.Builder
	sse(&b, "response.created", map[string]any{"type": "response.created", "sequence_number": 0, "response": responsesObject("in_progress", nil, nil)})
	sse(&b, "response.in_progress", map[string]any{"type": "response.in_progress", "sequence_number": 1, "response": responsesObject("in_progress", nil, nil)})
	sse(&b, "error", map[string]any{"type": "error", "sequence_number": 2, "error": responsesRefusal()})
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, b.String())
}

// serveResponses answers a step on the Responses API, streamed or not (cut
// after CutAfter events when set).
func (s *Server) serveResponses(w http.ResponseWriter, body []byte, step Step) {
	r := readResponsesRequest(body)
	summary := r.Reasoning.Summary != ""
	if step.CutAfter > 0 && r.Stream {
		events := strings.SplitAfter(ResponsesStream(step, summary), "\n\n")
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, strings.Join(events[:min(step.CutAfter, len(events))], ""))
		endCut(w, step)
		return
	}
	if r.Stream {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, ResponsesStream(step, summary))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, responsesBody(step, summary))
}

// responsesRefused is the body of the refusal of a request whose
// reasoning items were not issued by the fake, "" when they were (or the
// wire is another).
func (s *Server) responsesRefused(body []byte) string {
	if s.wire != responsesWire || !bytes.Contains(body, []byte(`"reasoning"`)) {
		return ""
	}
	return badReasoning(readResponsesRequest(body))
}
