package window

import (
	"strings"
	"testing"
)

func TestLookupMatchesDatedAndAliasedNames(t *testing.T) {
	tests := []struct {
		name    string
		want    Limits
		unknown bool
	}{
		{name: "claude-sonnet-4-5", want: Limits{200000, 64000, 0}},
		{name: "claude-sonnet-4-5-20250929", want: Limits{200000, 64000, 0}},
		{name: "claude-haiku-4-5-20251001", want: Limits{200000, 64000, 0}},
		{name: "claude-opus-4-1-20250805", want: Limits{200000, 32000, 0}},
		{name: "claude-opus-4-20250514", want: Limits{200000, 32000, 0}},
		{name: "claude-opus-4-0", want: Limits{200000, 32000, 0}},
		{name: "claude-sonnet-4-0", want: Limits{200000, 64000, 0}},
		{name: "claude-opus-4-5-20251101", want: Limits{200000, 64000, 0}},
		{name: "claude-3-7-sonnet-latest", want: Limits{200000, 64000, 0}},
		{name: "claude-3-5-sonnet-20241022", want: Limits{200000, 8192, 0}},
		{name: "claude-3-5-haiku-latest", want: Limits{200000, 8192, 0}},
		{name: "gpt-4o", want: Limits{128000, 16384, 0}},
		{name: "gpt-4o-2024-08-06", want: Limits{128000, 16384, 0}},
		{name: "gpt-4o-mini-2024-07-18", want: Limits{128000, 16384, 0}},
		{name: "gpt-4.1-mini", want: Limits{1047576, 32768, 0}},
		{name: "gpt-4.1-nano-2025-04-14", want: Limits{1047576, 32768, 0}},
		{name: "o1-mini", want: Limits{128000, 65536, 0}},
		{name: "o3-2025-04-16", want: Limits{200000, 100000, 0}},
		{name: "o4-mini", want: Limits{200000, 100000, 0}},
		{name: "gpt-5-2025-08-07", want: Limits{400000, 128000, 272000}},
		{name: "gpt-5-chat-latest", want: Limits{128000, 16384, 0}},
		{name: "GPT-5-Mini", want: Limits{400000, 128000, 272000}},
		{name: "openai/gpt-4.1", want: Limits{1047576, 32768, 0}},
		{name: "anthropic/claude-sonnet-4-5", want: Limits{200000, 64000, 0}},
		// Bedrock's and Vertex's ids for Claude, and Gemini.
		{name: "global.anthropic.claude-sonnet-4-5-20250929-v1:0", want: Limits{200000, 64000, 0}},
		{name: "anthropic.claude-3-5-sonnet-20240620-v1:0", want: Limits{200000, 8192, 0}},
		{name: "us.anthropic.claude-opus-4-1-20250805-v1:0", want: Limits{200000, 32000, 0}},
		{name: "claude-sonnet-4-5@20250929", want: Limits{200000, 64000, 0}},
		{name: "gemini-2.5-flash", want: Limits{1048576, 65536, 0}},
		{name: "gemini-2.0-flash", want: Limits{1048576, 8192, 0}},
		{name: "gemini-2.5-flash-lite", want: Limits{1048576, 65536, 0}},
		// Not guessed from a longer or shorter name.
		{name: "gpt-4o-audio-preview", unknown: true},
		{name: "claude-sonnet-4-5-turbo", unknown: true},
		{name: "gpt-5.1", unknown: true},
		{name: "o3-mini-2025", unknown: true},
		{name: "llama3", unknown: true},
		{name: "", unknown: true},
	}
	for _, tt := range tests {
		got, ok := Lookup(tt.name)
		if ok == tt.unknown || got != tt.want {
			t.Errorf("Lookup(%q) = %+v, %v; want %+v, %v", tt.name, got, ok, tt.want, !tt.unknown)
		}
	}
}

func TestForPrefersOverrideThenTableThenDefault(t *testing.T) {
	tests := []struct {
		model    string
		override int
		want     Window
	}{
		{"gpt-4o", 0, Window{"gpt-4o", Limits{128000, 16384, 0}, FromTable}},
		{"gpt-4o", 40000, Window{"gpt-4o", Limits{40000, 16384, 0}, FromOverride}},
		{"my-local-model", 0, Window{"my-local-model", Limits{DefaultContext, 0, 0}, FromDefault}},
		{"my-local-model", 65536, Window{"my-local-model", Limits{65536, 0, 0}, FromOverride}},
	}
	for _, tt := range tests {
		got, err := For(tt.model, tt.override)
		if err != nil || got != tt.want {
			t.Errorf("For(%q, %d) = %+v, %v; want %+v", tt.model, tt.override, got, err, tt.want)
		}
	}
}

func TestForRefusesANegativeOverrideNamingIt(t *testing.T) {
	_, err := For("gpt-4o", -5)
	if err == nil || !strings.Contains(err.Error(), "-5") || !strings.Contains(err.Error(), "gpt-4o") {
		t.Fatalf("For(gpt-4o, -5) error = %v; want one naming -5 and the model", err)
	}
}

func TestNoticeSpeaksOnlyOfAnAssumedWindow(t *testing.T) {
	for _, tt := range []struct {
		model    string
		override int
		want     string
	}{
		{"my-local-model", 0, `model "my-local-model" is not known; assuming 32768 tokens`},
		{"my-local-model", 1000, ""},
		{"gpt-4o", 0, ""},
	} {
		w, _ := For(tt.model, tt.override)
		got := w.Notice()
		if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
			t.Errorf("For(%q, %d).Notice() = %q; want %q", tt.model, tt.override, got, tt.want)
		}
	}
}

func TestBudgetLeavesRoomForTheAnswer(t *testing.T) {
	tests := []struct {
		model     string
		override  int
		maxTokens int
		want      int
		err       string
	}{
		{"claude-sonnet-4-5-20250929", 0, 8192, 200000 - 8192, ""},
		{"gpt-4o", 40000, 4096, 40000 - 4096, ""},
		{"unknown-model", 0, 8192, DefaultContext - 8192, ""},
		{"gpt-4o", 0, 0, 0, "must be positive"},
		{"gpt-4o", 0, -1, 0, "must be positive"},
		{"gpt-4o", 9000, 8192, 0, "leaves 808 for the request after 8192"},
		{"gpt-4o", 8192, 8192, 0, "raise --context-window"},
		{"gpt-4o", -1, 8192, 0, "positive number of tokens"},
		// GPT-5 caps input at 272,000 of its 400,000 window, whatever the answer's room
		{"gpt-5-mini", 0, 8192, 272000, ""},
		{"gpt-5", 0, 200000, 200000, ""},
	}
	for _, tt := range tests {
		got, err := Budget(tt.model, tt.override, tt.maxTokens)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Budget(%q, %d, %d) = %d, %v; want an error containing %q", tt.model, tt.override, tt.maxTokens, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Budget(%q, %d, %d) = %d, %v; want %d", tt.model, tt.override, tt.maxTokens, got, err, tt.want)
		}
	}
}
