package window

import "fmt"

// The defaults of a Policy's zero fields (docs/agent.md gives the
// reasoning).
const (
	// DefaultHigh is the high mark, as a fraction of the request's budget
	// (the window less the answer's room): a request estimated above it
	// makes room first.
	DefaultHigh = 0.80
	// DefaultLow is the low mark: when room is made, enough is taken out
	// at once to bring the request under it, so that the cached prefix
	// breaks once per batch, not at every request.
	DefaultLow = 0.50
	// DefaultKeepRounds is how many of the newest tool rounds keep their
	// results when room is made (fewer when they alone pass the low mark,
	// never fewer than the last one).
	DefaultKeepRounds = 3
	// DefaultMinInput is the size in bytes above which a tool call's input
	// (a workspace--write of a long file) may be taken out like a result.
	DefaultMinInput = 2048
)

// Policy is how a conversation is kept within its window (contract §12).
// The zero value is the default policy.
type Policy struct {
	// High is the high mark as a fraction of the budget; 0 means
	// DefaultHigh.
	High float64
	// Low is the low mark as a fraction of the budget; 0 means
	// DefaultLow. It must not be above High.
	Low float64
	// KeepRounds is how many of the newest rounds keep their results; 0
	// means DefaultKeepRounds.
	KeepRounds int
	// MinInput is the size in bytes above which a call's input may be
	// taken out; 0 means DefaultMinInput.
	MinInput int
	// Off turns the policy off: nothing is ever taken out, and a
	// conversation that outgrows its window fails as the provider refuses
	// it. For measuring the policy against no policy; not for users.
	Off bool
}

// withDefaults is p with its zero fields set to the defaults.
func (p Policy) withDefaults() Policy {
	if p.High == 0 {
		p.High = DefaultHigh
	}
	if p.Low == 0 {
		p.Low = DefaultLow
	}
	if p.KeepRounds == 0 {
		p.KeepRounds = DefaultKeepRounds
	}
	if p.MinInput == 0 {
		p.MinInput = DefaultMinInput
	}
	return p
}

// Check says what is wrong with p, naming the field and its value, or
// returns nil.
func (p Policy) Check() error {
	d := p.withDefaults()
	switch {
	case d.High <= 0 || d.High > 1:
		return fmt.Errorf("the high mark %g is not a fraction of the window: it must be above 0 and at most 1", p.High)
	case d.Low <= 0 || d.Low > d.High:
		return fmt.Errorf("the low mark %g must be above 0 and not above the high mark %g", d.Low, d.High)
	case d.KeepRounds < 1:
		return fmt.Errorf("keep rounds %d: at least the last round keeps its results (1 or more)", p.KeepRounds)
	case d.MinInput < 1:
		return fmt.Errorf("the smallest input taken out %d must be a positive number of bytes", p.MinInput)
	}
	return nil
}
