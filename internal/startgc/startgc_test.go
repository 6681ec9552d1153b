package startgc

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// gcPercent reads GOGC as the runtime has it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestDonePutsBackTheSettingFoundOnce(t *testing.T) {
	defer debug.SetGCPercent(gcPercent())
	debug.SetGCPercent(100)
	restore.Store(int64(putOff(func(string) (string, bool) { return "", false })))
	if got := gcPercent(); got != startPercent || restore.Load() != 100 {
		t.Fatalf("after putOff: GOGC %d, to restore %d; want %d and 100", got, restore.Load(), startPercent)
	}
	Done()
	if got := gcPercent(); got != 100 {
		t.Fatalf("after Done: GOGC %d, want 100 back", got)
	}
	debug.SetGCPercent(50)
	Done() // a second call must not undo a later setting
	if got := gcPercent(); got != 50 {
		t.Fatalf("a second Done changed GOGC to %d, want the 50 set since", got)
	}
}

func TestTheEngineAndAUsersGOGCAreLeftAsTheyAre(t *testing.T) {
	defer debug.SetGCPercent(gcPercent())
	for name, env := range map[string]map[string]string{
		"script engine": {engineEnv: "1"},
		"GOGC set":      {"GOGC": "100"},
		"GOGC off":      {"GOGC": "off"},
	} {
		debug.SetGCPercent(100)
		r := putOff(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		if got := gcPercent(); r != -1 || got != 100 {
			t.Errorf("%s: putOff returned %d and left GOGC %d; want -1 and 100 untouched", name, r, got)
		}
	}
}

// The collector's first cycle, when it comes before Done, lowers GOGC
// from the starting goal's setting to afterPercent; Done then puts back
// the setting found.
func TestTheFirstCycleBeforeDoneLowersTheSetting(t *testing.T) {
	defer debug.SetGCPercent(gcPercent())
	debug.SetGCPercent(100)
	restore.Store(int64(putOff(func(string) (string, bool) { return "", false })))
	lowered := make(chan struct{})
	afterFirstCycle(func() { lower(); close(lowered) })
	for cycles := 0; ; cycles++ {
		if cycles == 100 {
			t.Fatal("100 cycles ran, and afterFirstCycle's function was not called")
		}
		runtime.GC()
		select {
		case <-lowered:
		case <-time.After(10 * time.Millisecond):
			continue
		}
		break
	}
	if got := gcPercent(); got != afterPercent {
		t.Fatalf("after the first cycle: GOGC %d, want %d", got, afterPercent)
	}
	Done()
	if got := gcPercent(); got != 100 {
		t.Fatalf("after Done: GOGC %d, want 100 back", got)
	}
}

// A first cycle after Done leaves the setting Done put back.
func TestAFirstCycleAfterDoneLeavesTheSettingPutBack(t *testing.T) {
	defer debug.SetGCPercent(gcPercent())
	debug.SetGCPercent(100)
	restore.Store(int64(putOff(func(string) (string, bool) { return "", false })))
	Done()
	lower()
	if got := gcPercent(); got != 100 {
		t.Fatalf("a lowering after Done set GOGC %d, want the 100 put back", got)
	}
}
