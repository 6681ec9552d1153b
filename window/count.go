package window

import (
	"math"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
)

// DefaultBytesPerToken is the ratio used before a conversation has any
// usage to calibrate on: a little below what English prose and code give
// (about 4 bytes a token), so that a first estimate errs on the large side.
const DefaultBytesPerToken = 3.5

// The bounds a calibrated ratio is held within, so that one odd usage
// report (a provider that reports 0, a fake) cannot make the estimate
// absurd.
const (
	MinBytesPerToken = 1.0
	MaxBytesPerToken = 8.0
)

// ImageTokens is what one image in a tool result is counted as: about what
// Anthropic charges for an image of the largest size it keeps without
// scaling (about 1.15 megapixels), and more than OpenAI's high detail tile
// count for it.
const ImageTokens = 1600

// partOverhead is the bytes counted for each part besides its text: the
// framing the wire wraps it in (type, ids, role), roughly; calibration
// absorbs the difference, since every request is counted the same way.
const partOverhead = 16

// FixedBytes is the size of what every request sends besides its
// messages: the system prompt and the tool definitions, counted as the
// bytes of their text.
func FixedBytes(system string, tools []provider.Tool) int {
	n := len(system)
	for _, t := range tools {
		n += len(t.Name) + len(t.Description) + len(t.InputSchema) + partOverhead
	}
	return n
}

// MessageBytes is the size of a message as a wire sends it, counted as the
// bytes of its text: text parts, tool calls' names and inputs, tool
// results' text (which holds their images' placeholders), plus a little
// for each part's framing. Images are not in it (see Images).
func MessageBytes(m history.Message) int {
	n := 0
	for _, p := range m.Parts {
		n += partBytes(p)
	}
	return n
}

// partBytes is MessageBytes of one part.
func partBytes(p history.Part) int {
	if p.Type == history.ReasoningPart && len(p.Raw) > 0 {
		return partOverhead + len(p.Raw) + len(p.Signature) // Raw holds the text as sent
	}
	return partOverhead + len(p.Text) + len(p.Name) + len(p.Input) + len(p.CallID) + len(p.Raw) + len(p.Signature)
}

// Images is how many images a message's tool results carry.
func Images(m history.Message) int {
	n := 0
	for _, p := range m.Parts {
		n += len(p.Images)
	}
	return n
}

// Count is the size of a request in tokens, and how it was reached.
type Count struct {
	// Tokens is the request's size: Counted + Estimated.
	Tokens int
	// Counted is what the provider counted: the input, cache read and
	// cache write tokens of the last answer with usage, which cover the
	// request that produced it. 0 when no answer has usage.
	Counted int
	// Estimated is the estimate for how this request differs from the
	// one Counted counted (all of the request when Counted is 0): its
	// bytes over BytesPerToken, plus ImageTokens an image. It is below 0
	// when edits stored since took out more than came.
	Estimated int
	// Since is the index of the first message Estimated covers: the
	// answer whose usage is Counted, or 0.
	Since int
	// NewBytes is the bytes Estimated is made from: the request's bytes
	// less the counted request's.
	NewBytes int
	// BytesPerToken is the ratio Estimated used: this conversation's own
	// (Calibrated) or DefaultBytesPerToken.
	BytesPerToken float64
	// Calibrated is whether BytesPerToken came from this conversation's
	// usage.
	Calibrated bool
}

// inputOf is the tokens a usage says its request held.
func inputOf(u *history.Usage) int {
	if u == nil {
		return 0
	}
	return u.Input + u.CacheRead + u.CacheWrite
}

// Counted reports whether m is an answer whose usage counts its request
// (input tokens, read from the cache or written to it): the answers the
// window calibrates its estimate by (Measure, Ratio).
func Counted(m *history.Message) bool {
	return m.Role == history.Assistant && inputOf(m.Usage) > 0
}

// lastCounted is the index of the last assistant message whose usage
// counts its request, or -1.
func lastCounted(msgs []history.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if Counted(&msgs[i]) {
			return i
		}
	}
	return -1
}

// Ratio is this conversation's bytes per token: the bytes of the request
// that produced the last answer with usage (fixed, then the messages before
// it as that request sent them: View of them, with the edits stored before
// it), over the tokens its usage counted, less ImageTokens for each image it
// held; held within MinBytesPerToken and MaxBytesPerToken. Before any
// usage, or when the images take all of the count, it is
// DefaultBytesPerToken and calibrated is false. stored is the conversation
// as stored, records included.
func Ratio(fixed int, stored []history.Message) (ratio float64, calibrated bool) {
	t := Whole(stored)
	return t.Ratio(fixed)
}

// Ratio is Ratio of the conversation t holds.
func (t *Tail) Ratio(fixed int) (ratio float64, calibrated bool) {
	k := t.lastCounted()
	if k < 0 {
		return DefaultBytesPerToken, false
	}
	bytes, images := t.size(k)
	return ratioOf(fixed+bytes, images, t.At(k).Usage)
}

// ratioOf is the ratio of a request of bytes (fixed part included) and
// images that usage u counted.
func ratioOf(bytes, images int, u *history.Usage) (float64, bool) {
	tokens := inputOf(u) - images*ImageTokens
	if tokens <= 0 || bytes <= 0 {
		return DefaultBytesPerToken, false
	}
	r := float64(bytes) / float64(tokens)
	return math.Min(MaxBytesPerToken, math.Max(MinBytesPerToken, r)), true
}

// Measure is the size in tokens of the next request of a conversation
// stored as stored (records included): fixed bytes of system prompt and
// tools (FixedBytes), then View(stored). What the last answer's usage
// counted is exact — its request: the messages before that answer as they
// were sent, with the edits stored before it — and the difference between
// that request and this one is estimated with the conversation's own ratio
// (Ratio): what came since is added, and what edits stored since took out
// is taken off. With no usage yet, all of it is estimated with
// DefaultBytesPerToken.
func Measure(fixed int, stored []history.Message) Count {
	s := read(Whole(stored))
	return s.Measure(fixed)
}

// Measure is Measure(fixed, s.Messages()), with the edits already
// gathered.
func (s *Stored) Measure(fixed int) Count {
	t := &s.t
	c := Count{BytesPerToken: DefaultBytesPerToken}
	k := s.last
	if k < 0 {
		nowBytes, nowImages := sizeUnder(t, s.all, t.End())
		nowBytes += fixed
		c.NewBytes = nowBytes
		c.Estimated = int(math.Ceil(float64(nowBytes)/c.BytesPerToken)) + nowImages*ImageTokens
		c.Tokens = c.Estimated
		return c
	}
	// the request the last usage counted: the messages before k, with the
	// edits stored before k; and the request now
	before, split := s.editsBefore(k)
	thenBytes, thenImages := sizeUnder(t, before, k)
	nowBytes, nowImages := thenBytes, thenImages
	if split { // the edits since change what was sent then: all of it again
		nowBytes, nowImages = sizeUnder(t, s.all, t.End())
	} else { // one walk: what came since, under the same edits
		b, i := sizeFrom(t, s.all, k, t.End())
		nowBytes, nowImages = thenBytes+b, thenImages+i
	}
	thenBytes += fixed
	nowBytes += fixed
	c.BytesPerToken, c.Calibrated = ratioOf(thenBytes, thenImages, t.At(k).Usage)
	c.Counted, c.Since = inputOf(t.At(k).Usage), k
	c.NewBytes = nowBytes - thenBytes
	c.Estimated = int(math.Ceil(float64(c.NewBytes)/c.BytesPerToken)) + (nowImages-thenImages)*ImageTokens
	c.Tokens = max(c.Counted+c.Estimated, int(math.Ceil(float64(nowBytes)/MaxBytesPerToken)))
	return c
}
