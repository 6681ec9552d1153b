package history

// Context is the role of a stored record that is not a message of the
// conversation but a decision about what its requests send (contract §12):
// an Edit. A request never
// sends a Context record; it is built from the stored messages with the
// edits stored before its place applied (window.View), so that a request
// built after a restart is byte for byte the one the same process would have
// built. A Context record has no Parts.
const Context Role = "context"

// Edit is a stored decision about the requests of a conversation from its
// place in the conversation on: tool results and tool call inputs taken out
// of them, each replaced by a placeholder, or the older messages replaced by
// a summary. It changes no stored message: every message stays as it was
// (contract §12), and the edit only says what requests send instead.
type Edit struct {
	// Cleared are the results and call inputs taken out, oldest first,
	// each with the exact text sent in its place.
	Cleared []Cleared `json:"cleared,omitempty"`
	// Summary, when set, stands in requests for the stored messages
	// before Summary.Through.
	Summary *Summary `json:"summary,omitempty"`
	// Why says what prompted the edit, for people reading the history.
	Why string `json:"why,omitempty"`
	// Refusal, when set, says that the edit withheld a round's results
	// because the model refused to answer them (the agent's refusal
	// guard): Cleared then holds the round's results, each with the
	// placeholder sent in its place, and Refusal the answer refused with.
	Refusal *Refusal `json:"refusal,omitempty"`
	// Before and After are the next request's size in tokens, estimated
	// before and after the edit.
	Before int `json:"before,omitempty"`
	After  int `json:"after,omitempty"`
}

// Cleared is one tool result, or one tool call's input, taken out of
// requests.
type Cleared struct {
	// Msg is the place of the stored message holding what was taken out
	// (the call's message for an input, the results' message for a
	// result): call ids alone may repeat across rounds.
	Msg int `json:"msg"`
	// CallID names the call whose result (or input) was taken out.
	CallID string `json:"call_id"`
	// Input is set when what was taken out is the call's input, not its
	// result.
	Input bool `json:"input,omitempty"`
	// Text is what requests send in its place: a result's text, or the
	// JSON object sent as the call's input.
	Text string `json:"text"`
	// Path is the workspace file holding what was taken out whole, ""
	// when it could not be written (Text then says why).
	Path string `json:"path,omitempty"`
	// Chars is how many characters were taken out.
	Chars int `json:"chars"`
	// Images is how many images went with it.
	Images int `json:"images,omitempty"`
}

// Summary is the model's summary of the older part of a conversation,
// standing in requests for the stored messages before Through.
type Summary struct {
	// Through is the place of the first stored message the summary does
	// not stand for: it replaces messages 0 to Through-1 (records
	// included) in requests from its own place on.
	Through int `json:"through"`
	// Text is the text of the user message requests send in their place.
	Text string `json:"text"`
	// Usage is what the request that wrote the summary cost.
	Usage *Usage `json:"usage,omitempty"`
}

// Refusal is an answer the model refused with, which the refusal guard met
// by withholding the results it answered (Edit.Refusal). It is stored so
// that nothing the model sent is lost, and it is never sent: the request
// that follows is sent again as if that answer had not come, with the
// results withheld.
type Refusal struct {
	// Stop is the answer's stop reason, in its wire's words ("refusal",
	// "content_filter", "safety", ...).
	Stop string `json:"stop"`
	// Text is the answer's text as it streamed (the user saw it).
	Text string `json:"text,omitempty"`
	// Usage is what the refused request cost.
	Usage *Usage `json:"usage,omitempty"`
}

// Settings are what a conversation's requests are sent with besides its
// messages. A turn stores them with its first answer when they differ from
// the last stored ones,
// so that a resume that changes any of them can say that the provider's
// cached prefix will not be reused, and why.
type Settings struct {
	// Model is the model requests name.
	Model string `json:"model"`
	// System is the SHA-256, in hex, of the system prompt.
	System string `json:"system"`
	// Tools is the SHA-256, in hex, of the tool definitions as sent.
	Tools string `json:"tools"`
	// Cache says how the wire marks the prompt cache ("" when it does
	// not say).
	Cache string `json:"cache,omitempty"`
	// CacheTTL is how long the provider's cache keeps what the requests
	// mark, as the wire says it ("1h"); "" is the provider's default
	// (five minutes on the Anthropic family), and is not stored, so that
	// settings stored before the choice existed read the same.
	CacheTTL string `json:"cache_ttl,omitempty"`
}

// IsRecord reports whether m is a Context record rather than a message of
// the conversation.
func (m Message) IsRecord() bool { return m.Role == Context }

// Tally counts what an edit took out of requests: results and call inputs,
// their characters, and how many of them are whole in a workspace file.
type Tally struct{ Results, Inputs, Chars, InFiles int }

// Tally counts e's cleared items.
func (e Edit) Tally() Tally {
	var t Tally
	for _, c := range e.Cleared {
		if c.Input {
			t.Inputs++
		} else {
			t.Results++
		}
		t.Chars += c.Chars
		if c.Path != "" {
			t.InFiles++
		}
	}
	return t
}
