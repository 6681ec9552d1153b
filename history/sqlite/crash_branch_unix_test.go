//go:build unix

package sqlite

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/storetest"
)

// branchCrashChild tells a re-run of this test binary to take a run of
// storetest.Steps on a store until it is killed: "path|seed|from".
const branchCrashChild = "MYELIN_HISTORY_BRANCH_CRASH_CHILD"

// branchCrashSeed is the run of steps the test takes (storetest.Steps).
const branchCrashSeed = 30

// A process taking forks, rewinds, switches and appends one after another
// is killed (SIGKILL: no Close, no checkpoint) at random points, eight
// times, a new process going on from where the store is each time. After
// each kill the store opens, passes SQLite's own checks (integrity, the
// foreign keys), and holds exactly what the run held after some step:
// each conversation reads what it read before the step killed or after
// it, never half of it — no fork record without its link, no rows moved
// without the records that shared them pointed at where they went.
func TestAProcessKilledWhileForkingOrRewindingLeavesNoHalfBranch(t *testing.T) {
	if spec := os.Getenv(branchCrashChild); spec != "" {
		stepUntilKilled(spec)
		return
	}
	steps, states := storetest.Steps(branchCrashSeed, 600)
	path := filepath.Join(t.TempDir(), "h.db")
	ctx := context.Background()
	s := openStore(t, path)
	if err := s.Create(ctx, history.Conversation{ID: storetest.Root}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	r := rand.New(rand.NewPCG(branchCrashSeed, 1))
	from := 0
	for kill := range 8 {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestAProcessKilledWhileForkingOrRewindingLeavesNoHalfBranch$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%d|%d", branchCrashChild, path, branchCrashSeed, from))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// killed once it has the store open and is taking steps, at a
		// random point among them
		line, _ := bufio.NewReader(out).ReadString('\n')
		if line != "stepping\n" {
			cmd.Wait()
			t.Fatalf("kill %d: the stepping process said %q, not that it steps: %s", kill+1, line, stderr.String())
		}
		time.Sleep(time.Duration(2+r.IntN(40)) * time.Millisecond)
		cmd.Process.Kill()
		cmd.Wait()
		if strings.Contains(stderr.String(), "step ") {
			t.Fatalf("kill %d: the stepping process failed before it was killed: %s", kill+1, stderr.String())
		}

		s, err := Open(path)
		if err != nil {
			t.Fatalf("kill %d: the store does not open: %v", kill+1, err)
		}
		for _, check := range []string{"PRAGMA integrity_check", "PRAGMA foreign_key_check"} {
			var got string
			if err := s.db.QueryRowContext(ctx, check).Scan(&got); err != nil && check == "PRAGMA integrity_check" {
				t.Fatalf("kill %d: %s: %v", kill+1, check, err)
			} else if err == nil && got != "ok" {
				t.Fatalf("kill %d: %s: %s", kill+1, check, got)
			}
		}
		k, err := storetest.Matching(ctx, s, states, from)
		s.Close()
		if err != nil {
			t.Fatalf("kill %d, after step %d (%s) or later: %v", kill+1, from, steps[min(from, len(steps)-1)], err)
		}
		if k == len(states)-1 {
			t.Fatalf("kill %d: all %d steps were taken before the kill; want it among them (more steps)", kill+1, len(steps))
		}
		t.Logf("kill %d: %d steps taken, then step %d (%s) killed before its commit, or before it began", kill+1, k-from, k, steps[k])
		from = k
	}
	if from == 0 {
		t.Fatal("no step was taken in eight processes")
	}
}

// stepUntilKilled is the child's part: open the store spec names, say so,
// and take its steps from the one it names on, until it is killed.
func stepUntilKilled(spec string) {
	parts := strings.Split(spec, "|")
	seed, _ := strconv.ParseUint(parts[1], 10, 64)
	from, _ := strconv.Atoi(parts[2])
	s, err := Open(parts[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "opening:", err)
		os.Exit(3)
	}
	steps, _ := storetest.Steps(seed, 600)
	fmt.Println("stepping")
	ctx := context.Background()
	for k := from; k < len(steps); k++ {
		if err := steps[k].Do(ctx, s); err != nil {
			fmt.Fprintf(os.Stderr, "step %d (%s): %v\n", k, steps[k], err)
			os.Exit(3)
		}
	}
	select {} // killed
}
