package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
)

// thinkingFlags are the flags of run and chat about the model's thinking.
type thinkingFlags struct {
	thinking    string // --thinking: "", a budget in tokens, or "adaptive"
	interleaved bool   // --interleaved-thinking
	show        bool   // --show-thinking
}

func (f *thinkingFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&f.thinking, "thinking", "", "ask the model to think before it answers (anthropic): a budget `BUDGET` in tokens, at least 1024 and less than --max-tokens, or adaptive (the model decides; Claude Opus 4.6, Sonnet 4.6 and later)")
	fs.BoolVar(&f.interleaved, "interleaved-thinking", false, "with --thinking BUDGET, send the beta header "+anthropic.InterleavedBeta+" so that Claude 4 models before 4.6 think between tool calls too (the budget may then pass --max-tokens)")
	fs.BoolVar(&f.show, "show-thinking", false, "show the model's thinking on stderr as it streams (never on stdout)")
}

// config is the anthropic.Thinking the flags ask for, with maxTokens the
// answer's room, or an error naming the flags and their values.
func (f *thinkingFlags) config(maxTokens int) (anthropic.Thinking, error) {
	var th anthropic.Thinking
	switch v := strings.TrimSpace(f.thinking); {
	case v == "":
		if f.interleaved {
			return th, fmt.Errorf("--interleaved-thinking asks for --thinking BUDGET too")
		}
		return th, nil
	case v == "adaptive":
		if f.interleaved {
			return th, fmt.Errorf("--interleaved-thinking goes with --thinking BUDGET: adaptive thinking thinks between tool calls without it")
		}
		th.Adaptive = true
		return th, nil
	default:
		n, err := strconv.Atoi(v)
		if err != nil {
			return th, fmt.Errorf("--thinking %q: give a budget in tokens (at least %d, less than --max-tokens) or adaptive", f.thinking, anthropic.MinThinkingBudget)
		}
		th.Budget, th.Interleaved = n, f.interleaved
	}
	switch {
	case th.Budget < anthropic.MinThinkingBudget:
		return th, fmt.Errorf("--thinking %d: the budget is in tokens, at least %d (the API's minimum)", th.Budget, anthropic.MinThinkingBudget)
	case th.Budget >= maxTokens && !th.Interleaved:
		return th, fmt.Errorf("--thinking %d is not less than --max-tokens %d: the thinking counts toward the answer's room, so give a smaller budget or a larger --max-tokens (or --interleaved-thinking, where the budget is the whole turn's)", th.Budget, maxTokens)
	}
	return th, th.Check(maxTokens)
}

// withThinking is prov asking for th; a wire that has no thinking setting
// is an error naming it when th asks for thinking.
func withThinking(prov provider.Provider, name string, th anthropic.Thinking) (provider.Provider, error) {
	if !th.On() {
		return prov, nil
	}
	switch p := prov.(type) {
	case *anthropic.Provider:
		return p.WithThinking(th)
	case *anthropic.OnPlatform: // Claude on Bedrock, Vertex or the Google Cloud gateway
		return p.WithThinking(th)
	}
	return nil, fmt.Errorf("--thinking: the %s wire has no thinking budget; it is for Claude (--provider anthropic, bedrock, vertex or google-cloud)", name)
}

// thought writes a Thinking event's text to stderr, when --show-thinking
// asked for it: "[thinking] " opens a run of it, a line end closes it
// before anything else is written (closeThinking). r.mu is held.
func (r *reporter) thought(e agent.Event) {
	if !r.showThinking || e.Text == "" {
		return
	}
	r.erase()
	if !r.thinking {
		fmt.Fprint(r.stderr, "[thinking] ")
		r.thinking = true
	}
	fmt.Fprint(r.stderr, e.Text)
}

// closeThinking ends a run of thinking on stderr with a line end; r.mu is
// held.
func (r *reporter) closeThinking() {
	if r.thinking {
		fmt.Fprintln(r.stderr)
		r.thinking = false
	}
}
