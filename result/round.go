package result

import (
	"encoding/json"
	"regexp"
	"time"
)

// DefaultCap is the inline cap when neither the call, the agent nor the host
// sets one: the most characters of one result's text that go into the
// conversation.
const DefaultCap = 24000

// MinCap is the floor of every cap, and how short the round bound may make a
// result's head.
const MinCap = 1000

// Limits are the caps that apply to a round, as configured above the call.
// The zero value means the defaults.
type Limits struct {
	// Agent is the agent's inline cap; 0 means unset.
	Agent int
	// Host is the host configuration's inline cap; 0 means unset.
	Host int
	// Round bounds the sum of a round's texts; 0 means 4 × the inline cap.
	Round int
}

// InlineCap is the cap above the call: the agent's, else the host's, else
// DefaultCap, and never below MinCap.
func (l Limits) InlineCap() int { return CapFor(0, l) }

// RoundBound is the bound on the sum of a round's texts.
func (l Limits) RoundBound() int {
	if l.Round > 0 {
		return max(l.Round, MinCap)
	}
	return 4 * l.InlineCap()
}

// CapFor is the cap of one call (SPEC §5): the call's own limit, else the
// agent's, else the host's, else DefaultCap; never below MinCap.
func CapFor(call int, l Limits) int {
	for _, c := range []int{call, l.Agent, l.Host} {
		if c > 0 {
			return max(c, MinCap)
		}
	}
	return DefaultCap
}

// Call is one tool call's result on its way into the conversation.
type Call struct {
	// ID is the call's id; it names the spill file and saved payloads.
	ID string
	// Result is what the tool returned.
	Result Result
	// Cap is the call's own limit on its text; 0 means none.
	Cap int
}

// Env is what the conversion needs from around it. The zero value works: no
// workspace (results over their cap say that the rest was not kept) and the
// default caps.
type Env struct {
	// Store is where spill files and payloads go; nil means there is no
	// writable workspace.
	Store Store
	// Limits are the caps above the call.
	Limits Limits
	// Now dates the spill files; nil means time.Now.
	Now func() time.Time
}

// Output is a result as the conversation holds it: Text is what history
// stores, what the model reads, what a script and the API get.
type Output struct {
	// Text is the result's text: well formed, within its cap, a spilled
	// result's head followed by its notice.
	Text string
	// IsError flags an error result; Text is then the error text.
	IsError bool
	// EndTurn asks the agent to end its turn after this round.
	EndTurn bool
	// Images go natively on the wire; their placeholders stand in Text.
	Images []Image
	// Structured is the result's structured content, nil when it had none.
	Structured json.RawMessage
	// SpillPath is the workspace-relative path of the spill file holding the
	// whole text, "" when the text was not cut or could not be kept.
	SpillPath string
	// Files are the workspace-relative paths of saved payloads (binary
	// output, audio, blobs), in the order they appear in Text.
	Files []string
	// Chars is the length in characters of the whole text, before any cut.
	Chars int
}

// One converts the result of a single call: a round of one.
func One(c Call, env Env) Output { return Round([]Call{c}, env)[0] }

// Round is the one conversion: it turns the results of one round into the
// text the conversation holds (SPEC §1–§6), in call order. Each result
// becomes its full text; a text over its cap is spilled whole and replaced by
// its head and a notice; then, while the round's texts together are over the
// round bound, the largest is cut further (down to MinCap characters).
func Round(calls []Call, env Env) []Output {
	now := time.Now
	if env.Now != nil {
		now = env.Now
	}
	date := now().UTC().Format("2006-01-02")
	outs := make([]Output, len(calls))
	pieces := make([]piece, len(calls))
	for i, c := range calls {
		label := date + "-" + safeLabel(c.ID)
		cv := convert(c.Result, env.Store, label)
		outs[i] = Output{
			IsError:    cv.isError,
			EndTurn:    cv.endTurn,
			Images:     cv.images,
			Structured: cv.structured,
			Files:      cv.files,
		}
		pieces[i] = newPiece(cv.text, CapFor(c.Cap, env.Limits), label)
	}
	fitRound(pieces, env.Limits.RoundBound())
	for i := range pieces {
		p := &pieces[i]
		outs[i].Chars = p.chars
		if p.chars <= p.cap {
			outs[i].Text = p.text
			continue
		}
		sp := p.spill(env.Store)
		outs[i].Text = sp.head(p.cap)
		outs[i].SpillPath = sp.path
	}
	return outs
}

// fitRound lowers the caps of the largest results until the round's shown
// characters fit the bound or every result is at MinCap.
func fitRound(ps []piece, bound int) {
	for {
		sum, big := 0, -1
		for i := range ps {
			s := ps[i].shown()
			sum += s
			if s > MinCap && (big < 0 || s > ps[big].shown()) {
				big = i
			}
		}
		if sum <= bound || big < 0 {
			return
		}
		ps[big].cap = max(MinCap, ps[big].shown()-(sum-bound))
	}
}

var unsafeLabel = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// safeLabel makes a call id fit a file name: characters outside
// [A-Za-z0-9._-] become `_`, at most 64 of them, never empty or a dot name.
func safeLabel(id string) string {
	s := unsafeLabel.ReplaceAllString(id, "_")
	if len(s) > 64 {
		s = s[:64]
	}
	if s == "" || s == "." || s == ".." {
		s = "call"
	}
	return s
}
