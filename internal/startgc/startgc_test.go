package startgc

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
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

// sink keeps the child's last allocation from being optimised away.
var sink []byte

// childEnv makes this test binary the child of
// TestTheInitLowersTheSettingAtTheFirstCycle.
const childEnv = "MYELIN_STARTGC_CHILD"

// The init has the collector's first cycle lower GOGC: a fresh process
// (this test binary again, its init run with GOGC unset) that allocates
// past the first goal before Done runs at afterPercent once its first
// cycle has run — not at startPercent, whose next goal would be 65
// times what it keeps (from a review).
func TestTheInitLowersTheSettingAtTheFirstCycle(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		// 64 KB at a time, up to 1 GB, until the setting is lowered; read
		// without setting it (gcPercent's setting may start a cycle)
		gogc := func() int {
			s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
			metrics.Read(s)
			return int(s[0].Value.Uint64())
		}
		var ms runtime.MemStats
		first := gogc()
		for i := 0; i < 16384 && gogc() != afterPercent; i++ {
			sink = make([]byte, 64<<10)
		}
		runtime.ReadMemStats(&ms)
		fmt.Printf("GOGC %d %d, after %d cycles, %d MB allocated\n", first, gogc(), ms.NumGC, ms.TotalAlloc>>20)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestTheInitLowersTheSettingAtTheFirstCycle$")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOGC=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, childEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("GOGC %d %d,", startPercent, afterPercent)) {
		t.Fatalf("the child: %v\n%s\nwant GOGC %d at first and %d once past the first goal", err, out, startPercent, afterPercent)
	}
}
