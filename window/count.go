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
		n += partOverhead + len(p.Text) + len(p.Name) + len(p.Input) + len(p.CallID)
	}
	return n
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
	// Estimated is the estimate for what came since (all of the request
	// when Counted is 0): its bytes over BytesPerToken, plus ImageTokens
	// an image.
	Estimated int
	// Since is the index of the first message Estimated covers: the
	// answer whose usage is Counted, or 0.
	Since int
	// NewBytes is the bytes Estimated is made from.
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

// lastCounted is the index of the last assistant message whose usage
// counts its request, or -1.
func lastCounted(msgs []history.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == history.Assistant && inputOf(msgs[i].Usage) > 0 {
			return i
		}
	}
	return -1
}

// Ratio is this conversation's bytes per token: the bytes of the request
// that produced the last answer with usage (fixed, then msgs before it),
// over the tokens its usage counted, less ImageTokens for each image it
// held; held within MinBytesPerToken and MaxBytesPerToken. Before any
// usage, or when the images take all of the count, it is
// DefaultBytesPerToken and calibrated is false. msgs must be the messages
// as they were sent: the requests the usage counted.
func Ratio(fixed int, msgs []history.Message) (ratio float64, calibrated bool) {
	k := lastCounted(msgs)
	if k < 0 {
		return DefaultBytesPerToken, false
	}
	bytes, images := fixed, 0
	for _, m := range msgs[:k] {
		bytes += MessageBytes(m)
		images += Images(m)
	}
	tokens := inputOf(msgs[k].Usage) - images*ImageTokens
	if tokens <= 0 || bytes <= 0 {
		return DefaultBytesPerToken, false
	}
	r := float64(bytes) / float64(tokens)
	return math.Min(MaxBytesPerToken, math.Max(MinBytesPerToken, r)), true
}

// Measure is the size in tokens of the request that sends fixed bytes of
// system prompt and tools (FixedBytes) and msgs: exact for what the last
// answer's usage counted (its request: everything before that answer),
// estimated for that answer and what follows it, with the conversation's
// own ratio (Ratio). With no usage yet, all of it is estimated with
// DefaultBytesPerToken.
//
// msgs must be the messages as the request sends them, and the messages
// before the last answer with usage must be the ones its request sent;
// whoever takes messages out of requests measures with the counted part
// sent as it was, or with no usage in it.
func Measure(fixed int, msgs []history.Message) Count {
	ratio, calibrated := Ratio(fixed, msgs)
	c := Count{BytesPerToken: ratio, Calibrated: calibrated}
	newBytes, images := fixed, 0
	if k := lastCounted(msgs); k >= 0 {
		c.Counted, c.Since, newBytes = inputOf(msgs[k].Usage), k, 0
	}
	for _, m := range msgs[c.Since:] {
		newBytes += MessageBytes(m)
		images += Images(m)
	}
	c.NewBytes = newBytes
	c.Estimated = int(math.Ceil(float64(newBytes)/ratio)) + images*ImageTokens
	c.Tokens = c.Counted + c.Estimated
	return c
}
