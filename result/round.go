package result

import (
	"encoding/json"
	"regexp"
	"sync"
	"sync/atomic"
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

// CapFor is the cap of one call (contract §5): the call's own limit, else the
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
	// Reply is the head (ReplyKept bytes at most, made well formed) of the
	// tool's own reply as it came (Result.Reply: an MCP server's result
	// JSON), and ReplySize its whole size in bytes; "" and 0 when it had
	// none. They are for people inspecting a call; nothing sends them.
	Reply     string
	ReplySize int
	// Repaired is how many ill-formed sequences of the result's text the
	// conversion replaced with U+FFFD (contract §3); 0 when it had none.
	// Text that was not text at all became a file instead (Files).
	Repaired int

	full *piece // the full text, from Convert until Fit
}

// shown is how many characters of Text count toward the round bound.
func (o *Output) shown() int {
	if o.full != nil {
		return o.full.shown()
	}
	return Chars(o.Text)
}

// One converts the result of a single call: a round of one.
func One(c Call, env Env) Output { return Round([]Call{c}, env)[0] }

// Round is the one conversion: it turns the results of one round into the
// text the conversation holds (contract §1–§6), in call order. It is [Convert]
// for each call, then [Fit] for the round.
func Round(calls []Call, env Env) []Output {
	outs := make([]Output, len(calls))
	for i, c := range calls {
		outs[i] = Convert(c, env)
	}
	return Fit(outs, env)
}

// Convert converts one call's result alone: its full text, and when that is
// over the call's cap, the spill file written whole and the head with its
// notice in Text. It is the text the call has before the round bound, which
// [Fit] may shorten further; a consumer that keeps results as each call
// finishes (the agent, for a crash) keeps this, and the round's text comes
// from Fit. Convert writes each spill file and payload once: Fit never
// writes them again.
func Convert(c Call, env Env) Output {
	label := spillLabel{spillDate(env), safeLabel(c.ID)}
	cap := CapFor(c.Cap, env.Limits)
	cv := convert(c.Result, env.Store, label, cap)
	out := Output{
		IsError:    cv.isError,
		EndTurn:    cv.endTurn,
		Images:     cv.images,
		Structured: cv.structured,
		Files:      cv.files,
		Repaired:   cv.repaired,
		ReplySize:  max(c.Result.ReplySize, len(c.Result.Reply)),
	}
	if len(c.Result.Reply) > 0 {
		head := c.Result.Reply[:min(len(c.Result.Reply), ReplyKept)]
		out.Reply = WellFormed(string(head)) // a cut inside a character is made well formed too
	}
	var p piece
	if cv.big != nil { // a TextFile over its cap: spilled as it was read
		p = *cv.big
	} else {
		p = newPiece(cv.text, cap, label)
	}
	out.Chars = p.chars
	if p.chars <= p.cap {
		out.Text = p.text
	} else {
		p.spill(env.Store)
		out.Text = p.sp.head(p.cap, 0)
		out.SpillPath = p.sp.path
	}
	out.full = &p
	return out
}

// Fit applies the round bound (contract §6) to the outputs of one round, each
// from [Convert], in call order. While the texts together are over the
// bound, the largest is cut further: spilled, when it had fit its cap, and
// its head shortened, never below [MinCap] characters of its own text (the
// notice comes on top). When every text is at that floor the round stays
// over its bound. Outputs that did not come from Convert count as they are
// and are left alone. The outputs Fit returns no longer hold their full
// texts.
func Fit(outs []Output, env Env) []Output {
	bound := env.Limits.RoundBound()
	sum := 0
	for i := range outs {
		sum += outs[i].shown()
	}
	for sum > bound {
		big := -1
		for i := range outs {
			if p := outs[i].full; p != nil && !p.fixed && p.shown() > MinCap && (big < 0 || p.shown() > outs[big].full.shown()) {
				big = i
			}
		}
		if big < 0 {
			break
		}
		p := outs[big].full
		if !p.shortenable(env.Store) { // now marked fixed
			continue
		}
		before := p.shown()
		p.cap = max(p.floor(), before-(sum-bound))
		sum -= before - p.shown()
		o := &outs[big]
		o.Text = p.sp.head(p.cap, MinCap)
		o.SpillPath = p.sp.path
	}
	for i := range outs {
		outs[i].full = nil
	}
	return outs
}

func spillDate(env Env) string {
	now := time.Now
	if env.Now != nil {
		now = env.Now
	}
	t := now().UTC()
	y, m, d := t.Date()
	if c := lastDate.Load(); c != nil && c.y == y && c.m == m && c.d == d {
		return c.s // formatted once a day, not for every result
	}
	s := t.Format("2006-01-02")
	lastDate.Store(&date{y, m, d, s})
	return s
}

// spillLabel names a result's files: "<date>-<call id made safe>", then
// ".txt" for its spill, "-1.png" for a payload. It is joined only when a
// file is named: most results name none.
type spillLabel struct{ date, id string }

func (l spillLabel) String() string { return l.date + "-" + l.id }

// date is a day and its spill-label form.
type date struct {
	y int
	m time.Month
	d int
	s string
}

// lastDate is the last day spillDate formatted.
var lastDate atomic.Pointer[date]

// Compiled at its first use, not at init: every myelin process ran the init (issue 34).
var unsafeLabel = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9._-]`) })

// labelSafe reports whether id has no character unsafeLabel matches:
// then it is its own label, with no regular expression run (most ids).
func labelSafe(id string) bool {
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// safeLabel makes a call id fit a file name: characters outside
// [A-Za-z0-9._-] become `_`, at most 64 of them, never empty or a dot name.
func safeLabel(id string) string {
	s := id
	if !labelSafe(id) {
		s = unsafeLabel().ReplaceAllString(id, "_")
	}
	if len(s) > 64 {
		s = s[:64]
	}
	if s == "" || s == "." || s == ".." {
		s = "call"
	}
	return s
}
