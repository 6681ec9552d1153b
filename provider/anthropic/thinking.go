package anthropic

import (
	"fmt"
	"strconv"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/internal/jsonstring"
	"github.com/myelin-run/myelin/result"
)

// Wire is the name this wire stores in history.Part.Wire on the reasoning
// parts it reads (thinking and redacted_thinking blocks), and the only
// reasoning it sends back. Claude on Bedrock and Vertex speaks the same
// Messages API and shares this encoder, so it is the same wire.
const Wire = "anthropic"

// MinThinkingBudget is the smallest thinking budget the Messages API takes.
const MinThinkingBudget = 1024

// InterleavedBeta is the beta header value that lets Claude 4 models
// before 4.6 think between tool calls with a budget (Thinking.Interleaved).
const InterleavedBeta = "interleaved-thinking-2025-05-14"

// Thinking is the extended thinking a request asks for (Config.Thinking).
// The zero value asks for none: the request then has no "thinking" key and
// is byte for byte what it was before thinking existed.
//
// Whatever it asks, the wire sends no sampling parameter (temperature,
// top_k, top_p) and no tool_choice — the ones the API refuses or limits
// with thinking on — because it never sends any. Thinking and
// redacted_thinking blocks of earlier answers are sent back in every
// request, as stored, whether thinking is on or not: the API requires them
// inside a tool loop, and accepts them elsewhere.
type Thinking struct {
	// Budget, above 0, turns thinking on with that many tokens:
	// {"type":"enabled","budget_tokens":Budget}. The API wants at least
	// MinThinkingBudget and, unless Interleaved, less than the request's
	// max_tokens (thinking counts toward it). Claude 4.7 and later refuse
	// a budget: use Adaptive.
	Budget int
	// Adaptive lets the model decide how much to think:
	// {"type":"adaptive"}, on the models that take it (Claude Opus 4.6,
	// Sonnet 4.6 and later); it thinks between tool calls without any
	// header. Not with Budget.
	Adaptive bool
	// Interleaved sends the header anthropic-beta: InterleavedBeta, with
	// which Claude 4 models before 4.6 also think between the tool calls
	// of one turn; the budget is then the whole turn's and may pass
	// max_tokens. It is sent only when asked for. Only with Budget.
	Interleaved bool
	// Display, when set, is sent as thinking.display: "summarized" (the
	// thinking's text comes back) or "omitted" (it comes back empty, the
	// signature alone kept). "" leaves the model's default, which on
	// Claude Opus 4.7 is "omitted".
	Display string
}

// String says what th asks for, in a few words: "thinking adaptive",
// "thinking budget 2048 tokens, interleaved", "" when off.
func (th Thinking) String() string {
	var s string
	switch {
	case th.Adaptive:
		s = "thinking adaptive"
	case th.Budget != 0:
		s = fmt.Sprintf("thinking budget %d tokens", th.Budget)
		if th.Interleaved {
			s += ", interleaved"
		}
	default:
		return ""
	}
	if th.Display != "" {
		s += ", display " + th.Display
	}
	return s
}

// On reports whether th asks for thinking.
func (th Thinking) On() bool { return th.Budget != 0 || th.Adaptive }

// Check says what is wrong with th for a request whose max_tokens is
// maxTokens (0: not known yet, the budget is then not compared with it),
// naming the numbers; nil when nothing is.
func (th Thinking) Check(maxTokens int) error {
	switch {
	case th.Budget < 0:
		return fmt.Errorf("anthropic: thinking budget %d: give a number of tokens, at least %d", th.Budget, MinThinkingBudget)
	case th.Budget > 0 && th.Adaptive:
		return fmt.Errorf("anthropic: thinking is either a budget (%d tokens) or adaptive, not both", th.Budget)
	case th.Budget > 0 && th.Budget < MinThinkingBudget:
		return fmt.Errorf("anthropic: thinking budget %d tokens is below the API's minimum of %d", th.Budget, MinThinkingBudget)
	case th.Budget > 0 && maxTokens > 0 && th.Budget >= maxTokens && !th.Interleaved:
		return fmt.Errorf("anthropic: thinking budget %d tokens must be less than max_tokens %d (the thinking counts toward the answer's room): lower the budget or raise max_tokens", th.Budget, maxTokens)
	case th.Interleaved && th.Budget == 0:
		return fmt.Errorf("anthropic: interleaved thinking asks for a thinking budget (adaptive thinking interleaves without the beta header)")
	case th.Display != "" && !th.On():
		return fmt.Errorf("anthropic: thinking display %q without thinking", th.Display)
	case th.Display != "" && th.Display != "summarized" && th.Display != "omitted":
		return fmt.Errorf("anthropic: thinking display %q: want summarized or omitted", th.Display)
	}
	return nil
}

// appendParam appends th's member of a request's head to b, after a
// comma, as the SDK's ThinkingConfigParamUnion encoded it:
// ,"thinking":{"display":...,"type":"adaptive"} when Adaptive (whatever
// Budget), else ,"thinking":{"budget_tokens":Budget,"display":...,"type":"enabled"}
// when Budget is above 0, display only when set; nothing when th is off.
// It checks nothing (Check does).
func (th Thinking) appendParam(b []byte) []byte {
	switch {
	case th.Adaptive:
		b = append(b, `,"thinking":{`...)
	case th.Budget > 0:
		b = append(b, `,"thinking":{"budget_tokens":`...)
		b = strconv.AppendInt(b, int64(th.Budget), 10)
		b = append(b, ',')
	default:
		return b
	}
	if th.Display != "" {
		b = append(b, `"display":`...)
		b = appendString(b, th.Display)
		b = append(b, ',')
	}
	if th.Adaptive {
		return append(b, `"type":"adaptive"}`...)
	}
	return append(b, `"type":"enabled"}`...)
}

// betas is the betas th asks for: the values of the anthropic-beta
// header, which Bedrock takes in the body instead
// (Platform.BetasInBody).
func (th Thinking) betas() []string {
	if th.Interleaved {
		return []string{InterleavedBeta}
	}
	return nil
}

// WithThinking returns a copy of p whose requests ask for th, or an error
// saying what is wrong with th (its budget is compared with each request's
// max_tokens when the request is built).
func (p *Provider) WithThinking(th Thinking) (*Provider, error) {
	if err := th.Check(0); err != nil {
		return nil, err
	}
	q := *p
	q.cfg.Thinking = th
	// the beta header th asks for, if any
	var err error
	if q.send, q.whole, err = p.conn.senders(q.cfg, th); err != nil {
		return nil, err
	}
	return &q, nil
}

// reasoningBlock is a thinking block as the API wants it back: the
// block's type, its thinking as it came and its signature, in the API's
// order, compact (as history stores JSON), so that it is sent back byte
// for byte after any number of restarts.
func reasoningBlock(thinking, signature string) []byte {
	b := []byte(`{"type":"thinking","thinking":`)
	b = jsonstring.Append(b, thinking, false)
	b = append(b, `,"signature":`...)
	b = jsonstring.Append(b, signature, false)
	return append(b, '}')
}

// redactedBlock is a redacted_thinking block as the API wants it back.
func redactedBlock(data string) []byte {
	b := []byte(`{"type":"redacted_thinking","data":`)
	b = jsonstring.Append(b, data, false)
	return append(b, '}')
}

// reasoningPart is the stored part of a block of kind "thinking" (Text its
// readable thinking) or "redacted_thinking" (Text "", data its data).
func reasoningPart(kind, thinking, signature, data string) history.Part {
	if kind == "redacted_thinking" {
		return history.Part{Type: history.ReasoningPart, Wire: Wire, Raw: redactedBlock(data)}
	}
	return history.Part{Type: history.ReasoningPart, Wire: Wire, Text: result.WellFormed(thinking), Raw: reasoningBlock(thinking, signature)}
}

// sendable reports whether part p of a message goes on this wire: text
// that is not empty, tool calls and results, and this wire's own
// reasoning when a block of the answer follows it (the API refuses an
// assistant message that ends in thinking — an answer stopped while it
// thought — so such trailing thinking stays in the store only).
func sendable(parts []history.Part, i int) bool {
	p := &parts[i]
	switch p.Type {
	case history.TextPart:
		return p.Text != ""
	case history.ToolCallPart, history.ToolResultPart:
		return true
	case history.ReasoningPart:
		if p.Wire != Wire || len(p.Raw) == 0 {
			return false
		}
		for _, q := range parts[i+1:] {
			if q.Type == history.ToolCallPart || q.Type == history.ToolResultPart || (q.Type == history.TextPart && q.Text != "") {
				return true
			}
		}
	}
	return false
}
