package ratelimit

import (
	"context"
	"testing"
)

func TestTheModelOfAContextIsTheOneWithModelSetOrNone(t *testing.T) {
	if m := ModelOf(context.Background()); m != "" {
		t.Errorf("a context without a model names %q", m)
	}
	ctx := WithModel(context.Background(), "claude-x")
	if m := ModelOf(WithModel(ctx, "claude-y")); m != "claude-y" {
		t.Errorf("the model set last is %q, want claude-y", m)
	}
	if m := ModelOf(ctx); m != "claude-x" {
		t.Errorf("the model set is %q, want claude-x", m)
	}
}
