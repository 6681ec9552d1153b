package startgc

import (
	"runtime/debug"
	"testing"
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
	if got := gcPercent(); got != initPercent || restore.Load() != 100 {
		t.Fatalf("after putOff: GOGC %d, to restore %d; want %d and 100", got, restore.Load(), initPercent)
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
