package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/myelin-run/myelin/history"
)

// This file is a reproducible run of forks, rewinds, switches and appends
// for the tests that interrupt a store in the middle of one (a process
// killed, a connection cut, a context cancelled): Steps says what each
// conversation holds after each step, so that what a store holds after
// the interruption can be matched to one of those states — before the
// step interrupted or after it, never a half of it.

// Root is the conversation a run of Steps starts from: it must be in the
// store, empty, before the first step.
const Root = "root"

// Step is one write of a run made by Steps.
type Step struct {
	// Op is "append", "fork", "rewind" or "switch".
	Op string
	// ID is the conversation written: appended to, made by the fork,
	// rewound, switched.
	ID string
	// Other is the fork's base, the branch a rewind makes, or the branch
	// switched to.
	Other string
	// At is the fork's point, or the rewind's.
	At int
	// Texts are the texts of the messages appended, each new.
	Texts []string
}

// String says the step for a failure message: "fork root at 3 into f1".
func (st Step) String() string {
	switch st.Op {
	case "append":
		return fmt.Sprintf("append %d to %s", len(st.Texts), st.ID)
	case "fork":
		return fmt.Sprintf("fork %s at %d into %s", st.Other, st.At, st.ID)
	case "rewind":
		return fmt.Sprintf("rewind %s to %d into %s", st.ID, st.At, st.Other)
	}
	return fmt.Sprintf("switch %s to %s", st.ID, st.Other)
}

// Held is what one conversation holds in a State.
type Held struct {
	Texts    []string // its messages' texts, in order
	BranchOf string
}

// State is what every conversation of a run holds at one moment.
type State map[string]Held

// Steps returns n steps from seed, each one a store can take after those
// before it, and the states they lead to: states[k] is what the
// conversations hold after the first k steps (states[0]: Root, empty).
// The steps are worked out on a Memory, which names the branches as every
// store does.
func Steps(seed uint64, n int) (steps []Step, states []State) {
	ctx := context.Background()
	m := &history.Memory{}
	if err := m.Create(ctx, history.Conversation{ID: Root}); err != nil {
		panic(err)
	}
	r := rand.New(rand.NewPCG(seed, 30))
	ids, branchOf := []string{Root}, map[string]string{}
	state := func() State {
		out := State{}
		for _, id := range ids {
			msgs, err := m.Messages(ctx, id)
			if err != nil {
				panic(err)
			}
			out[id] = Held{Texts: Texts(msgs), BranchOf: branchOf[id]}
		}
		return out
	}
	states = []State{state()}
	texts := 0
	for len(steps) < n {
		id := ids[r.IntN(len(ids))]
		count := len(states[len(states)-1][id].Texts)
		var st Step
		switch op := r.IntN(10); {
		case op < 4:
			st = Step{Op: "append", ID: id}
			for range 1 + r.IntN(3) {
				texts++
				st.Texts = append(st.Texts, fmt.Sprint("m", texts))
			}
		case op < 6:
			st = Step{Op: "fork", ID: fmt.Sprint("f", len(steps)), Other: id, At: r.IntN(count + 1)}
		case op < 8:
			if count == 0 {
				continue
			}
			st = Step{Op: "rewind", ID: id, At: r.IntN(count)}
		default:
			var brs []string
			for b, of := range branchOf {
				if of == id {
					brs = append(brs, b)
				}
			}
			if len(brs) == 0 {
				continue
			}
			slices.Sort(brs)
			st = Step{Op: "switch", ID: id, Other: brs[r.IntN(len(brs))]}
		}
		made, err := st.do(ctx, m)
		if err != nil {
			panic(fmt.Sprintf("step %d (%s) on a Memory: %v", len(steps), st, err))
		}
		if made != "" {
			st.Other = made
			branchOf[made] = st.ID
		}
		switch st.Op {
		case "fork":
			ids = append(ids, st.ID)
		case "rewind":
			ids = append(ids, st.Other)
		}
		steps = append(steps, st)
		states = append(states, state())
	}
	return steps, states
}

// Do takes the step in store s (a history.Brancher): its error is the
// store's, or says that a rewind named its branch otherwise than the run
// expects.
func (st Step) Do(ctx context.Context, s history.Store) error {
	made, err := st.do(ctx, s)
	if err == nil && st.Op == "rewind" && made != st.Other {
		return fmt.Errorf("%s: the store named the branch %s", st, made)
	}
	return err
}

// do takes the step in s, returning the branch a rewind made.
func (st Step) do(ctx context.Context, s history.Store) (string, error) {
	b, ok := s.(history.Brancher)
	if !ok && st.Op != "append" {
		return "", fmt.Errorf("%T forks and rewinds nothing", s)
	}
	switch st.Op {
	case "append":
		msgs := make([]history.Message, len(st.Texts))
		for i, t := range st.Texts {
			msgs[i] = UserText(t)
		}
		return "", s.Append(ctx, st.ID, msgs...)
	case "fork":
		_, err := b.Fork(ctx, history.Conversation{ID: st.ID, Base: st.Other, BaseAt: st.At})
		return "", err
	case "rewind":
		br, err := b.Rewind(ctx, st.ID, st.At)
		return br.ID, err
	}
	return "", b.Switch(ctx, st.ID, st.Other)
}

// Matching returns the k, from from on, for which store s holds states[k]
// exactly: each conversation of it reads its texts, is the branch it says,
// and its record is true to what it reads (its count; its Base holding
// its first BaseAt messages), and no conversation of a later state is in
// s. Its error says what s holds that matches none: a half-done step.
func Matching(ctx context.Context, s history.Store, states []State, from int) (int, error) {
	var all []string
	for id := range states[len(states)-1] {
		all = append(all, id)
	}
	slices.Sort(all)
	got := State{}
	for _, id := range all {
		c, err := s.Get(ctx, id)
		if errors.Is(err, history.ErrNotFound) {
			continue
		}
		if err != nil {
			return -1, fmt.Errorf("Get(%s): %w", id, err)
		}
		msgs, err := s.Messages(ctx, id)
		if err != nil {
			return -1, fmt.Errorf("Messages(%s): %w", id, err)
		}
		if c.Messages != len(msgs) {
			return -1, fmt.Errorf("Get(%s).Messages = %d, but it reads %d messages", id, c.Messages, len(msgs))
		}
		got[id] = Held{Texts: Texts(msgs), BranchOf: c.BranchOf}
		if c.Base == "" {
			continue
		}
		base, err := s.Messages(ctx, c.Base)
		if err != nil {
			return -1, fmt.Errorf("Messages(%s), the base of %s: %w", c.Base, id, err)
		}
		if len(base) < c.BaseAt || !slices.Equal(Texts(base[:c.BaseAt]), got[id].Texts[:c.BaseAt]) {
			return -1, fmt.Errorf("%s shares the first %d messages of %s, which are not its own (%s holds %d)", id, c.BaseAt, c.Base, c.Base, len(base))
		}
	}
	for k := from; k < len(states); k++ {
		if Same(got, states[k]) {
			return k, nil
		}
	}
	var b strings.Builder
	for _, id := range all {
		fmt.Fprintf(&b, "\n  %s: %v", id, got[id])
	}
	return -1, fmt.Errorf("the store holds what no state from step %d on holds (a step half done):%s", from, &b)
}

// Same reports whether two states are the same. Two states a run passes
// through can be the same (a switch between two branches holding the same
// texts changes nothing a reader sees): Matching's k is then the first of
// them, and a test that knows which steps may have been taken compares
// the states instead.
func Same(a, b State) bool {
	if len(a) != len(b) {
		return false
	}
	for id, h := range a {
		o, ok := b[id]
		if !ok || o.BranchOf != h.BranchOf || !slices.Equal(o.Texts, h.Texts) {
			return false
		}
	}
	return true
}
