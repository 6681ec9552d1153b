package window

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/result"
)

// text is a message of one text part whose size (MessageBytes) is n.
func text(role history.Role, n int) history.Message {
	return history.Message{Role: role, Parts: []history.Part{{Type: history.TextPart, Text: strings.Repeat("a", n-partOverhead)}}}
}

// answer is an assistant message of size n with usage u.
func answer(n int, u history.Usage) history.Message {
	m := text(history.Assistant, n)
	m.Usage = &u
	return m
}

// withImages is a tool result message of size n carrying k images.
func withImages(n, k int) history.Message {
	m := text(history.User, n)
	m.Parts[0].Type = history.ToolResultPart
	for range k {
		m.Parts[0].Images = append(m.Parts[0].Images, result.Image{MIMEType: "image/png", Data: []byte{1}})
	}
	return m
}

func TestMeasureCountsExactlyWhatTheProviderCountedAndEstimatesTheRest(t *testing.T) {
	tests := []struct {
		name  string
		fixed int
		msgs  []history.Message
		want  Count
	}{{
		name:  "no usage yet: all estimated at the default ratio",
		fixed: 700,
		msgs:  []history.Message{text(history.User, 21)},
		want:  Count{Tokens: 206, Estimated: 206, NewBytes: 721, BytesPerToken: DefaultBytesPerToken},
	}, {
		name:  "an answer's usage covers its request; the answer and what follows are estimated at this conversation's ratio",
		fixed: 1000,
		msgs: []history.Message{
			text(history.User, 2000),
			answer(200, history.Usage{Input: 100, CacheRead: 600, CacheWrite: 50, Output: 999}),
			text(history.User, 4000),
		},
		// ratio (1000+2000)/750 = 4; new 4200 bytes / 4 = 1050.
		want: Count{Tokens: 750 + 1050, Counted: 750, Estimated: 1050, Since: 1, NewBytes: 4200, BytesPerToken: 4, Calibrated: true},
	}, {
		name:  "the last usage counts, not an earlier one",
		fixed: 0,
		msgs: []history.Message{
			text(history.User, 300),
			answer(100, history.Usage{Input: 100}),
			text(history.User, 500),
			answer(100, history.Usage{Input: 50, CacheRead: 250}),
			text(history.User, 600),
		},
		// ratio 900/300 = 3; new 700 / 3 = 233.3 -> 234.
		want: Count{Tokens: 300 + 234, Counted: 300, Estimated: 234, Since: 3, NewBytes: 700, BytesPerToken: 3, Calibrated: true},
	}, {
		name:  "an answer with no usage (cut, or a provider that reports none) is new, not counted",
		fixed: 0,
		msgs: []history.Message{
			text(history.User, 400),
			answer(100, history.Usage{Input: 200}),
			text(history.User, 100),
			answer(100, history.Usage{}),
			{Role: history.Assistant, Cut: true, Parts: []history.Part{{Type: history.TextPart, Text: strings.Repeat("b", 84)}}},
		},
		// ratio 400/200 = 2; new 100+100+100+100 = 400 / 2 = 200.
		want: Count{Tokens: 200 + 200, Counted: 200, Estimated: 200, Since: 1, NewBytes: 400, BytesPerToken: 2, Calibrated: true},
	}, {
		name:  "images count ImageTokens each, out of the ratio and in the estimate",
		fixed: 0,
		msgs: []history.Message{
			withImages(1000, 1),
			answer(100, history.Usage{Input: 250 + ImageTokens}),
			withImages(400, 2),
		},
		// ratio 1000/250 = 4; new 500 / 4 = 125, + 2 images.
		want: Count{Tokens: 1850 + 125 + 2*ImageTokens, Counted: 1850, Estimated: 125 + 2*ImageTokens, Since: 1, NewBytes: 500, BytesPerToken: 4, Calibrated: true},
	}, {
		name:  "an absurd usage is held to the ratio's bounds",
		fixed: 0,
		msgs: []history.Message{
			text(history.User, 3000),
			answer(100, history.Usage{Input: 10000}),
		},
		want: Count{Tokens: 10000 + 100, Counted: 10000, Estimated: 100, Since: 1, NewBytes: 100, BytesPerToken: MinBytesPerToken, Calibrated: true},
	}, {
		name:  "usage made of images alone does not calibrate",
		fixed: 0,
		msgs: []history.Message{
			withImages(100, 1),
			answer(100, history.Usage{Input: ImageTokens}),
			text(history.User, 35),
		},
		want: Count{Tokens: ImageTokens + 39, Counted: ImageTokens, Estimated: 39, Since: 1, NewBytes: 135, BytesPerToken: DefaultBytesPerToken},
	}, {
		name: "an empty conversation is its fixed part",
		want: Count{BytesPerToken: DefaultBytesPerToken},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Measure(tt.fixed, tt.msgs); got != tt.want {
				t.Errorf("Measure = %+v\nwant      %+v", got, tt.want)
			}
		})
	}
}

func TestMeasureDoesNotChangeTheMessages(t *testing.T) {
	msgs := []history.Message{text(history.User, 100), answer(50, history.Usage{Input: 30}), withImages(40, 1)}
	before, _ := json.Marshal(msgs)
	Measure(10, msgs)
	after, _ := json.Marshal(msgs)
	if string(before) != string(after) {
		t.Fatalf("Measure changed its messages:\n%s\n%s", before, after)
	}
}

func TestMessageBytesCountsWhatTheWireSends(t *testing.T) {
	tests := []struct {
		name string
		m    history.Message
		want int
	}{
		{"text", history.Message{Parts: []history.Part{{Type: history.TextPart, Text: "hello"}}}, partOverhead + 5},
		{"tool call", history.Message{Parts: []history.Part{{Type: history.ToolCallPart, CallID: "c1", Name: "shell--run", Input: json.RawMessage(`{"command":"ls"}`)}}}, partOverhead + 2 + 10 + 16},
		{"tool call with input that was not JSON", history.Message{Parts: []history.Part{{Type: history.ToolCallPart, CallID: "c1", Name: "t", Text: "{oops"}}}, partOverhead + 2 + 1 + 5},
		{"tool result: its text, not where it was spilled", history.Message{Parts: []history.Part{{Type: history.ToolResultPart, CallID: "c1", Text: "out", SpillPath: "/very/long/path"}}}, partOverhead + 2 + 3},
		{"two parts", history.Message{Parts: []history.Part{{Type: history.TextPart, Text: "a"}, {Type: history.TextPart, Text: "bc"}}}, 2*partOverhead + 3},
		{"no parts", history.Message{}, 0},
	}
	for _, tt := range tests {
		if got := MessageBytes(tt.m); got != tt.want {
			t.Errorf("%s: MessageBytes = %d; want %d", tt.name, got, tt.want)
		}
	}
}

func TestFixedBytesCountsSystemPromptAndToolDefinitions(t *testing.T) {
	tools := []provider.Tool{
		{Name: "workspace--read", Description: "Read a file.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "x", InputSchema: json.RawMessage(`{}`)},
	}
	want := len("system") + (15 + 12 + 17 + partOverhead) + (1 + 2 + partOverhead)
	if got := FixedBytes("system", tools); got != want {
		t.Fatalf("FixedBytes = %d; want %d", got, want)
	}
	if got := FixedBytes("", nil); got != 0 {
		t.Fatalf("FixedBytes of nothing = %d; want 0", got)
	}
}

func TestReasoningIsCountedOnceAsItsRawBlock(t *testing.T) {
	raw := `{"type":"thinking","thinking":"` + strings.Repeat("t", 1000) + `","signature":"sig"}`
	m := history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.ReasoningPart, Wire: "anthropic", Text: strings.Repeat("t", 1000), Raw: json.RawMessage(raw)}}}
	if got, want := MessageBytes(m), partOverhead+len(raw); got != want {
		t.Fatalf("MessageBytes = %d; want %d: the raw block, which holds the text, once", got, want)
	}
	if b, _ := size([]history.Message{m}, 1); b != partOverhead+len(raw) {
		t.Fatalf("size = %d; want %d", b, partOverhead+len(raw))
	}
}
