package providertest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// This file is the Gemini API side of the fake: its answers to
// generateContent and streamGenerateContent?alt=sse, its errors, and the
// thought signatures it hands out and checks, as Gemini 3 models do.
//
// Every answer is signed: the first function call of a step carries a
// thoughtSignature (Step.GeminiSignature, else one the server makes up,
// the same in every run of the same script), or, with no call, the text
// does — in a stream, in a last chunk of empty text, as the API sends it.
// A request whose current turn (the contents after the last user content
// that holds text, not only function responses) has a function call the
// server signed without that signature, byte for byte, is refused as the
// API refuses it: a 400 INVALID_ARGUMENT, "Function call is missing a
// thought_signature in functionCall parts. ..." when it is missing,
// "Corrupted thought signature." when it differs. It takes no step.

// NewGemini starts a fake Gemini API server; point the SDK's base URL (or
// GOOGLE_GEMINI_BASE_URL) at its URL.
func NewGemini(t testing.TB, steps ...Step) *Server { return start(t, "gemini", steps) }

// geminiState is what the server remembers of the signatures it gave.
type geminiState struct {
	n      int               // signatures made up so far
	issued map[string]string // call key → the signature its call carried
}

// callKey names a function call: its id, or, without one, its name.
func callKey(id, name string) string {
	if id != "" {
		return id
	}
	return "name:" + name
}

// sign gives the signature of step's answer and remembers it for the
// step's first call. It is called with s.mu held.
func (g *geminiState) sign(step Step) string {
	sig := step.GeminiSignature
	if sig == "" {
		g.n++
		sig = base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("providertest thought signature %d", g.n)))
	}
	if len(step.ToolCalls) > 0 {
		if g.issued == nil {
			g.issued = map[string]string{}
		}
		c := step.ToolCalls[0]
		g.issued[callKey(c.ID, c.Name)] = sig
	}
	return sig
}

// check is the refusal of a request body that drops or changes a
// signature of a call of its current turn, "" when there is none. It is
// called with s.mu held.
func (g *geminiState) check(body []byte) string {
	if len(g.issued) == 0 {
		return ""
	}
	var req struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				Text         *string `json:"text"`
				Signature    *string `json:"thoughtSignature"`
				FunctionCall *struct {
					ID   string `json:"id"`
					Name string `json:"name"`
				} `json:"functionCall"`
			} `json:"parts"`
		} `json:"contents"`
	}
	if json.Unmarshal(body, &req) != nil {
		return ""
	}
	start := 0
	for i, c := range req.Contents {
		for _, p := range c.Parts {
			if c.Role == "user" && p.Text != nil {
				start = i + 1
			}
		}
	}
	for i, c := range req.Contents[start:] {
		if c.Role != "model" {
			continue
		}
		for _, p := range c.Parts {
			if p.FunctionCall == nil {
				continue
			}
			want, ok := g.issued[callKey(p.FunctionCall.ID, p.FunctionCall.Name)]
			switch {
			case !ok:
			case p.Signature == nil:
				return fmt.Sprintf("Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:%s` , position %d. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.", p.FunctionCall.Name, start+i+1)
			case *p.Signature != want:
				return "Corrupted thought signature."
			}
		}
	}
	return ""
}

// geminiError is the API's error body for status with message.
func geminiError(status int, message string) string {
	name := "INVALID_ARGUMENT"
	switch {
	case status == http.StatusTooManyRequests:
		name = "RESOURCE_EXHAUSTED"
	case status == http.StatusServiceUnavailable:
		name = "UNAVAILABLE"
	case status >= 500:
		name = "INTERNAL"
	case status == http.StatusNotFound:
		name = "NOT_FOUND"
	case status == http.StatusForbidden:
		name = "PERMISSION_DENIED"
	}
	return mustJSON(map[string]any{"error": map[string]any{"code": status, "message": message, "status": name}})
}

// geminiRefusal is the body of the API's refusal of a request whose input
// (tokens) is over its limit (window), "" when it is not. Gemini limits
// the input alone; the answer's room has a limit of its own.
func geminiRefusal(window, tokens int) string {
	if tokens <= window {
		return ""
	}
	return geminiError(http.StatusBadRequest, fmt.Sprintf("The input token count (%d) exceeds the maximum number of tokens allowed (%d).", tokens, window))
}

// geminiAnswer signs step and gives its answer: a stream of chunks or one
// response.
func (s *Server) geminiAnswer(step Step, stream bool) string {
	s.mu.Lock()
	sig := s.gemini.sign(step)
	s.mu.Unlock()
	if stream {
		return GeminiStream(step, sig)
	}
	return geminiResponse(step, sig)
}

// geminiCall is a step's call as a functionCall part; an Input that is not
// a JSON object is left out (the API sends arguments as an object).
func geminiCall(c ToolCall) map[string]any {
	call := map[string]any{"name": c.Name}
	var args map[string]any
	if json.Unmarshal([]byte(c.Input), &args) == nil && args != nil {
		call["args"] = args
	}
	if c.ID != "" {
		call["id"] = c.ID
	}
	return map[string]any{"functionCall": call}
}

func geminiUsage(step Step) map[string]any {
	prompt := step.Input + step.CacheRead + step.CacheWrite
	u := map[string]any{"promptTokenCount": prompt, "candidatesTokenCount": step.Output, "totalTokenCount": prompt + step.Output}
	if step.CacheRead > 0 {
		u["cachedContentTokenCount"] = step.CacheRead
	}
	return u
}

func geminiChunk(parts []any, last bool, step Step) map[string]any {
	cand := map[string]any{"content": map[string]any{"parts": parts, "role": "model"}, "index": 0}
	chunk := map[string]any{"candidates": []any{cand}, "modelVersion": "gemini-test", "responseId": "resp_test"}
	if last {
		cand["finishReason"] = stopReason(step, "SAFETY", "STOP", "STOP")
		chunk["usageMetadata"] = geminiUsage(step)
	}
	return chunk
}

// GeminiStream is the event stream of a step's answer signed with sig:
// the thought, the text in two chunks, a chunk per call (the first one
// signed), and with no call a last chunk of empty text that carries the
// signature; the last chunk has the finish reason and the usage.
func GeminiStream(step Step, sig string) string {
	var groups [][]any
	if step.GeminiThought != "" {
		groups = append(groups, []any{map[string]any{"text": step.GeminiThought, "thought": true}})
	}
	if step.Text != "" {
		half := len(step.Text) / 2
		for half > 0 && half < len(step.Text) && step.Text[half]&0xC0 == 0x80 {
			half++
		}
		for _, part := range []string{step.Text[:half], step.Text[half:]} {
			if part != "" {
				groups = append(groups, []any{map[string]any{"text": part}})
			}
		}
	}
	for i, c := range step.ToolCalls {
		p := geminiCall(c)
		if i == 0 {
			p["thoughtSignature"] = sig
		}
		groups = append(groups, []any{p})
	}
	if len(step.ToolCalls) == 0 && step.Text != "" {
		groups = append(groups, []any{map[string]any{"text": "", "thoughtSignature": sig}})
	}
	if len(groups) == 0 {
		groups = append(groups, []any{})
	}
	var b strings.Builder
	for i, g := range groups {
		sse(&b, "", geminiChunk(g, i == len(groups)-1, step))
	}
	return b.String()
}

// geminiResponse is the whole answer to a request that did not stream.
func geminiResponse(step Step, sig string) string {
	parts := []any{}
	if step.GeminiThought != "" {
		parts = append(parts, map[string]any{"text": step.GeminiThought, "thought": true})
	}
	if step.Text != "" {
		p := map[string]any{"text": step.Text}
		if len(step.ToolCalls) == 0 {
			p["thoughtSignature"] = sig
		}
		parts = append(parts, p)
	}
	for i, c := range step.ToolCalls {
		p := geminiCall(c)
		if i == 0 {
			p["thoughtSignature"] = sig
		}
		parts = append(parts, p)
	}
	return mustJSON(geminiChunk(parts, true, step))
}
