package agent

import (
	"context"
	"testing"

	"github.com/myelin-run/myelin/provider/providertest"
)

// Every turn of a fork names its base's prompt cache (the Responses wire's
// prompt_cache_key, the root of its chain of forks), not only its first:
// the agent keeps the fork's record between turns, and what it keeps must
// still say what the fork shares.
func TestEveryTurnOfAForkNamesItsBasesPromptCache(t *testing.T) {
	for _, store := range []string{"sqlite", "memory"} {
		t.Run(store, func(t *testing.T) {
			r := newRigOn(t, store, "openai-responses")
			ctx := context.Background()
			r.srv.Push(providertest.Step{Text: "base"}, providertest.Step{Text: "fork one"}, providertest.Step{Text: "fork two"})
			r.turn("first")
			fork, err := r.agent.Fork(ctx, r.id, -1)
			if err != nil {
				t.Fatal(err)
			}
			for _, prompt := range []string{"one", "two"} {
				if _, err := r.agent.Turn(ctx, fork, prompt, nil); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 3 {
				if key := r.srv.Request(i)["prompt_cache_key"]; key != r.id {
					t.Errorf("request %d names the prompt cache %v; want the base's, %s", i, key, r.id)
				}
			}
		})
	}
}
