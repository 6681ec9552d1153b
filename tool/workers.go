package tool

import "sync"

// Workers keeps the goroutines that ran one round's calls, once they are
// done, for the calls of the rounds after it: a turn of many rounds starts
// a goroutine per call of its widest round instead of one per call of
// every round, and a call runs on a stack that has grown already (a
// handler decoding its input grows a new goroutine's stack at least once:
// on a light round that was a quarter of the dispatcher's CPU). The zero
// value is ready to use; its owner must Close it when its rounds are
// over, and after that it keeps no goroutine. A nil *Workers keeps none:
// each call gets a goroutine of its own.
//
// It must not hold a call back: it never queues one, only hands it to an
// idle goroutine or starts one, so calls run as concurrently as with a
// goroutine each. It keeps at most maxIdle goroutines idle, and none
// past Close.
type Workers struct {
	mu     sync.Mutex
	idle   []*worker
	closed bool
	live   int // goroutines started and not ended, for tests
}

// maxIdle bounds the goroutines a Workers keeps idle.
const maxIdle = 64

// worker is one kept goroutine: it runs what it is sent, and ends when
// its channel is closed.
type worker struct{ jobs chan func() }

// Go runs f on an idle kept goroutine, or on a new one.
func (w *Workers) Go(f func()) {
	if w == nil {
		go f()
		return
	}
	w.mu.Lock()
	if n := len(w.idle); n > 0 {
		k := w.idle[n-1]
		w.idle[n-1] = nil
		w.idle = w.idle[:n-1]
		w.mu.Unlock()
		k.jobs <- f // buffered: the worker is waiting for it, or about to
		return
	}
	w.live++
	w.mu.Unlock()
	go (&worker{jobs: make(chan func(), 1)}).run(w, f)
}

// run runs f, then what it is sent while w keeps it.
func (k *worker) run(w *Workers, f func()) {
	defer func() {
		w.mu.Lock()
		w.live--
		w.mu.Unlock()
	}()
	for f != nil {
		f()
		w.mu.Lock()
		if w.closed || len(w.idle) >= maxIdle {
			w.mu.Unlock()
			return
		}
		w.idle = append(w.idle, k)
		w.mu.Unlock()
		f = <-k.jobs // nil once closed
	}
}

// Close ends the idle goroutines, and each busy one when its call
// returns. Go may still be called after it: each call then gets a
// goroutine of its own that is not kept.
func (w *Workers) Close() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.closed = true
	idle := w.idle
	w.idle = nil
	w.mu.Unlock()
	for _, k := range idle {
		close(k.jobs)
	}
}

// counts are how many goroutines w has started that have not ended, and
// how many of them are idle.
func (w *Workers) counts() (live, idle int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.live, len(w.idle)
}
