package workspace

import (
	"encoding/binary"
	"regexp/syntax"
	"slices"
	"unicode/utf8"
)

// lineDFA answers whether one line holds a match of a regular expression,
// exactly as regexp.Match on that line alone would, at the cost of a table
// lookup per byte: a lazily built DFA over the pattern's regexp/syntax
// program. Each state is a set of the program's threads (the program's
// start is added at every position, so a match may start anywhere), built
// the first time a byte leads to it and kept. It must not be asked where a
// match is or what its groups hold, only whether there is one; it must not
// be given text holding '\n' (it is for one line); and it gives up (ok
// false from match) when its states outgrow their budget again and again,
// for the caller to fall back on regexp. One lineDFA is for one goroutine.
type lineDFA struct {
	prog    *syntax.Prog
	states  map[string]*dfaState
	start   *dfaState
	matched *dfaState // the sentinel a transition returns when a match ends before the byte
	size    int       // bytes the states take, roughly, against dfaBudget
	flushes int       // times the states were dropped for outgrowing the budget
	failed  bool      // flushed too often: the caller must use regexp

	// Runes past ASCII go by class: runes that the same instructions
	// consume lead every state to the same state (none of them is a word
	// byte). classes numbers each set of instructions (as a bitmap),
	// classRune is a rune of each class, and classCache remembers the
	// class of recent runes, by the rune's low bits.
	consumers  []uint32
	classes    map[string]int32
	classRune  []rune
	classCache [dfaClassCache]struct {
		r     rune
		class int32
	}

	// scratch, reused from miss to miss
	seen  []uint32 // sparse set: dense[seen[pc]] == pc when pc is in it
	dense []uint32
	stack []uint32
	key   []byte
}

// dfaState is a set of threads of the program at one place in a line: the
// instructions that consume a rune, InstMatch, and the empty-width
// assertions not yet decided (they need the next byte), sorted; and what
// is known of the byte before (none yet, or whether it is a word byte).
type dfaState struct {
	insts []uint32
	flag  uint8
	next  [utf8.RuneSelf]*dfaState // by ASCII byte; nil until first needed
	more  []*dfaState              // by the class of any other rune (see runeClass)
	end   int8                     // at the line's end: 1 a match, -1 none, 0 not known yet
	stop  uint8                    // stopMatched: the matched sentinel; stopDead: no match can come
}

const (
	stopMatched = 1 + iota
	stopDead
)

const (
	dfaBegin = 1 << iota // the state is at the line's start
	dfaWord              // the byte before is a word byte (\w)
)

// dfaBudget bounds the bytes a lineDFA's states take; past it they are
// dropped and built again as needed. A variable so that tests can make it
// small. dfaMaxFlushes is how many times that may happen before the lineDFA
// gives up.
var (
	dfaBudget     = 8 << 20
	dfaMaxFlushes = 16
)

// dfaClassCache is how many runes past ASCII a lineDFA remembers the class
// of (a power of two).
const dfaClassCache = 1024

// newLineDFA is a lineDFA for the parsed pattern, which compiled.
func newLineDFA(parsed *syntax.Regexp) (*lineDFA, error) {
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return nil, err
	}
	n := len(prog.Inst)
	d := &lineDFA{prog: prog, seen: make([]uint32, n), dense: make([]uint32, 0, n), matched: &dfaState{stop: stopMatched},
		classes: map[string]int32{}}
	for pc := range prog.Inst {
		switch prog.Inst[pc].Op {
		case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
			d.consumers = append(d.consumers, uint32(pc))
		}
	}
	for i := range d.classCache {
		d.classCache[i].r = -1
	}
	d.reset()
	return d, nil
}

// reset drops every state and makes the start state again.
func (d *lineDFA) reset() {
	d.states = map[string]*dfaState{}
	d.size = 0
	d.clear()
	d.follow(uint32(d.prog.Start), 0, false)
	d.start = d.intern(dfaBegin)
}

// match reports whether line holds a match; ok is false when the lineDFA
// has given up, and then matched means nothing.
func (d *lineDFA) match(line []byte) (matched, ok bool) {
	if d.failed {
		return false, false
	}
	s := d.start
	for i := 0; i < len(line); {
		c := line[i]
		if c < utf8.RuneSelf { // the common path, kept short
			n := s.next[c]
			if n == nil {
				if n = d.miss(s, rune(c)); n == nil {
					return false, false
				}
				s.next[c] = n
			}
			if n.stop != 0 {
				return n.stop == stopMatched, true
			}
			s = n
			i++
			continue
		}
		r, w := utf8.DecodeRune(line[i:])
		class := d.runeClass(r)
		if int(class) >= len(s.more) {
			d.size += 8 * (int(class) + 1 - len(s.more))
			s.more = append(s.more, make([]*dfaState, int(class)+1-len(s.more))...)
		}
		n := s.more[class]
		if n == nil {
			if n = d.miss(s, d.classRune[class]); n == nil {
				return false, false
			}
			s.more[class] = n
		}
		i += w
		if n.stop != 0 {
			return n.stop == stopMatched, true
		}
		s = n
	}
	if s.end == 0 {
		s.end = -1
		if d.resolve(s, -1) {
			s.end = 1
		}
	}
	return s.end == 1, true
}

// runeClass is the class of r, a rune past ASCII: the number of the set
// of instructions that consume it.
func (d *lineDFA) runeClass(r rune) int32 {
	e := &d.classCache[r&(dfaClassCache-1)]
	if e.r == r {
		return e.class
	}
	d.key = d.key[:0]
	for i, pc := range d.consumers {
		if i%8 == 0 {
			d.key = append(d.key, 0)
		}
		if consumes(&d.prog.Inst[pc], r) {
			d.key[len(d.key)-1] |= 1 << (i % 8)
		}
	}
	class, ok := d.classes[string(d.key)]
	if !ok {
		class = int32(len(d.classRune))
		d.classes[string(d.key)] = class
		d.classRune = append(d.classRune, r)
	}
	e.r, e.class = r, class
	return class
}

// miss works out where s goes on r: the matched sentinel when a match ends
// before r, else the state after r. It is nil when the lineDFA gives up.
func (d *lineDFA) miss(s *dfaState, r rune) *dfaState {
	if d.size > dfaBudget {
		d.flushes++
		if d.flushes > dfaMaxFlushes {
			d.failed = true
			return nil
		}
		insts, flag := s.insts, s.flag
		d.reset()
		d.clear()
		for _, pc := range insts {
			d.add(pc)
		}
		s = d.intern(flag)
	}
	if d.resolve(s, r) {
		return d.matched
	}
	// The threads that consume r go on; the program starts again after r.
	live := slices.Clone(d.dense) // small, and only on a miss
	d.clear()
	for _, pc := range live {
		if in := &d.prog.Inst[pc]; consumes(in, r) {
			d.follow(in.Out, 0, false)
		}
	}
	d.follow(uint32(d.prog.Start), 0, false)
	var flag uint8
	if syntax.IsWordChar(r) {
		flag = dfaWord
	}
	return d.intern(flag)
}

// resolve decides s's empty-width assertions at the place before r (-1:
// the line's end), leaving in the scratch set the threads that live, and
// reports whether one of them is a match.
func (d *lineDFA) resolve(s *dfaState, r rune) bool {
	var flags syntax.EmptyOp
	if s.flag&dfaBegin != 0 {
		flags |= syntax.EmptyBeginText | syntax.EmptyBeginLine
	}
	if r < 0 {
		flags |= syntax.EmptyEndText | syntax.EmptyEndLine
	}
	if (r >= 0 && syntax.IsWordChar(r)) != (s.flag&dfaWord != 0) {
		flags |= syntax.EmptyWordBoundary
	} else {
		flags |= syntax.EmptyNoWordBoundary
	}
	d.clear()
	for _, pc := range s.insts {
		d.follow(pc, flags, true)
	}
	for _, pc := range d.dense {
		if d.prog.Inst[pc].Op == syntax.InstMatch {
			return true
		}
	}
	return false
}

// follow adds pc and what it leads to without consuming a rune to the
// scratch set. Empty-width assertions are followed when decide is set and
// flags hold them, dropped when decide is set and flags do not, and kept
// undecided (not followed) when decide is not set.
func (d *lineDFA) follow(pc uint32, flags syntax.EmptyOp, decide bool) {
	d.stack = append(d.stack[:0], pc)
	for len(d.stack) > 0 {
		pc := d.stack[len(d.stack)-1]
		d.stack = d.stack[:len(d.stack)-1]
		if d.has(pc) {
			continue
		}
		in := &d.prog.Inst[pc]
		switch in.Op {
		case syntax.InstFail:
			continue
		case syntax.InstEmptyWidth:
			if decide && syntax.EmptyOp(in.Arg)&^flags != 0 {
				continue // does not hold here: the thread dies
			}
		}
		d.add(pc)
		switch in.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			d.stack = append(d.stack, in.Arg, in.Out)
		case syntax.InstNop, syntax.InstCapture:
			d.stack = append(d.stack, in.Out)
		case syntax.InstEmptyWidth:
			if decide {
				d.stack = append(d.stack, in.Out)
			}
		}
	}
}

// consumes reports whether the instruction consumes r.
func consumes(in *syntax.Inst, r rune) bool {
	switch in.Op {
	case syntax.InstRune:
		return in.MatchRune(r)
	case syntax.InstRune1:
		return r == in.Rune[0]
	case syntax.InstRuneAny:
		return true
	case syntax.InstRuneAnyNotNL:
		return r != '\n'
	}
	return false
}

// intern is the state of the scratch set's threads (those a state keeps)
// and flag, made when it is new.
func (d *lineDFA) intern(flag uint8) *dfaState {
	insts := d.dense[:0:0]
	for _, pc := range d.dense {
		switch d.prog.Inst[pc].Op {
		case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL, syntax.InstMatch, syntax.InstEmptyWidth:
			insts = append(insts, pc)
		}
	}
	slices.Sort(insts)
	d.key = append(d.key[:0], flag)
	for _, pc := range insts {
		d.key = binary.AppendUvarint(d.key, uint64(pc))
	}
	if s, ok := d.states[string(d.key)]; ok {
		return s
	}
	s := &dfaState{insts: insts, flag: flag}
	if flag&dfaBegin == 0 && d.dead(insts) {
		s.stop = stopDead
	}
	d.states[string(d.key)] = s
	d.size += 1100 + 4*len(insts) + len(d.key)
	return s
}

// dead reports whether a state past the line's start with these threads
// can never match: every thread waits on `^` or `\A` (the pattern is
// anchored at the start and its start has passed).
func (d *lineDFA) dead(insts []uint32) bool {
	for _, pc := range insts {
		in := &d.prog.Inst[pc]
		if in.Op != syntax.InstEmptyWidth || syntax.EmptyOp(in.Arg)&(syntax.EmptyBeginLine|syntax.EmptyBeginText) == 0 {
			return false
		}
	}
	return true
}

func (d *lineDFA) clear() { d.dense = d.dense[:0] }

func (d *lineDFA) has(pc uint32) bool {
	i := d.seen[pc]
	return int(i) < len(d.dense) && d.dense[i] == pc
}

func (d *lineDFA) add(pc uint32) {
	d.seen[pc] = uint32(len(d.dense))
	d.dense = append(d.dense, pc)
}
