package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/myelin-run/myelin/internal/jsonstring"
	"github.com/myelin-run/myelin/internal/sse"
)

// This file reads the answer: a streamed one event by event (internal/sse)
// and a whole one at once, each chunk read into chunk, which holds only the
// members the accumulator reads, by a scan held to encoding/json
// (unmarshalChunk, scan.go). genai decoded each
// chunk into a map, converted it into another and that into its typed
// response through encoding/json again (mapToStruct); that was most of
// the wire's time on a light round (docs/overhead.md).
// TestTheDirectReaderReadsWhatTheSDKReads holds this reading to genai's.

// chunk is one answer (or one chunk of a streamed one): the members the
// wire reads of a GenerateContentResponse, in the API's names, or the
// API's error object when the stream carries one in place of a chunk.
type chunk struct {
	Candidates     []candidate     `json:"candidates"`
	UsageMetadata  *usage          `json:"usageMetadata"`
	PromptFeedback *promptFeedback `json:"promptFeedback"`
	Error          *APIError       `json:"error"`
}

// candidate is a chunk's candidate: its content and why it stopped.
type candidate struct {
	Content      *content `json:"content"`
	FinishReason string   `json:"finishReason"`
}

// content is a candidate's content: its parts.
type content struct {
	Parts []part `json:"parts"`
}

// part is a content part as the wire reads it: text (a thought's when
// Thought), a function call, and the thought signature either may carry
// (base64, kept as the API sent it).
type part struct {
	Text             jsonstring.Text `json:"text"`
	Thought          bool            `json:"thought"`
	ThoughtSignature string          `json:"thoughtSignature"`
	FunctionCall     *functionCall   `json:"functionCall"`
}

// functionCall is a call the model made; Args is the arguments object as
// the API sent it (the accumulator re-encodes it, as genai's map did).
type functionCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// usage is the chunk's usageMetadata.
type usage struct {
	PromptTokenCount        int `json:"promptTokenCount"`
	CachedContentTokenCount int `json:"cachedContentTokenCount"`
	CandidatesTokenCount    int `json:"candidatesTokenCount"`
	ThoughtsTokenCount      int `json:"thoughtsTokenCount"`
}

// promptFeedback says why a prompt got no candidate.
type promptFeedback struct {
	BlockReason        string `json:"blockReason"`
	BlockReasonMessage string `json:"blockReasonMessage"`
}

// decodeChunk decodes one chunk's JSON into c (which it resets), or says
// what it was.
func decodeChunk(data []byte, c *chunk) error {
	if err := unmarshalChunk(data, c); err != nil {
		return fmt.Errorf("gemini: a chunk of the answer is not the JSON of one: %.200q: %w", data, err)
	}
	if c.Error != nil {
		return describe(*c.Error)
	}
	return nil
}

// readStream reads a streamed answer to its end into a: each event's data
// is a chunk, or the API's error object, which ends the answer with that
// error. An answer that came as JSON rather than as events (an error the
// API sent with 200) is read as one chunk. It does not check that the
// answer finished: Complete does.
func readStream(resp *http.Response, a *accumulator) error {
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "application/json" {
		return readWhole(resp.Body, a)
	}
	r := sse.Borrow(resp.Body)
	defer r.Release()
	var c chunk
	for r.Next() {
		if err := decodeChunk(r.Event().Data, &c); err != nil {
			return err
		}
		if err := a.add(&c); err != nil {
			return err
		}
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("gemini: reading the answer's stream: %w", err)
	}
	return nil
}

// readWhole reads an answer that came whole (generateContent) into a.
func readWhole(body io.Reader, a *accumulator) error {
	data, err := io.ReadAll(io.LimitReader(body, sse.MaxEvent+1))
	if err != nil {
		return fmt.Errorf("gemini: reading the answer: %w", err)
	}
	if len(data) > sse.MaxEvent {
		return fmt.Errorf("gemini: the answer passed %d bytes", sse.MaxEvent)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil // genai reads an empty body as an empty answer
	}
	var c chunk
	if err := decodeChunk(data, &c); err != nil {
		return err
	}
	return a.add(&c)
}
