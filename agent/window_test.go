package agent

import (
	"testing"

	"github.com/myelin-run/myelin/window"
)

func TestAgentWindowComesFromContextWindowThenTheModel(t *testing.T) {
	tests := []struct {
		model    string
		override int
		context  int
		source   window.Source
	}{
		{"gpt-4o-2024-08-06", 0, 128000, window.FromTable},
		{"gpt-4o", 40000, 40000, window.FromOverride},
		{"claude-test", 0, window.DefaultContext, window.FromDefault},
	}
	for _, tt := range tests {
		a := &Agent{Model: tt.model, ContextWindow: tt.override}
		w, err := a.Window()
		if err != nil || w.Context != tt.context || w.Source != tt.source {
			t.Errorf("Agent{Model: %q, ContextWindow: %d}.Window() = %+v, %v; want %d from %s", tt.model, tt.override, w, err, tt.context, tt.source)
		}
	}
	if _, err := (&Agent{Model: "gpt-4o", ContextWindow: -1}).Window(); err == nil {
		t.Error("a negative ContextWindow was accepted")
	}
}

func TestAnswerRoomIsMaxTokensOrTheDefault(t *testing.T) {
	for _, tt := range []struct{ in, want int }{{0, DefaultMaxTokens}, {-3, DefaultMaxTokens}, {1000, 1000}} {
		if got := AnswerRoom(tt.in); got != tt.want {
			t.Errorf("AnswerRoom(%d) = %d; want %d", tt.in, got, tt.want)
		}
	}
}
