package background

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/myelin-run/myelin/workspace"
)

// state is a script's file <id>.json beside its journal: what a later
// process needs to tell a conversation that a restart took its script
// away. PID is the process running it, 0 once it is not running there.
type state struct {
	ID           string    `json:"id"`
	Conversation string    `json:"conversation"`
	Started      time.Time `json:"started"`
	Lifetime     string    `json:"lifetime"`
	Journal      string    `json:"journal"`
	Status       string    `json:"status"`
	PID          int       `json:"pid,omitempty"`
	// Told is set once the conversation was told the script is gone.
	Told bool `json:"told,omitempty"`
}

// state is s's state, run by pid; m.mu is held.
func (s *bg) state(pid int) state {
	return state{ID: s.id, Conversation: s.conv, Started: s.started.UTC(), Lifetime: s.lifetime.String(), Journal: s.journal, Status: s.status, PID: pid}
}

// goneStatuses are the statuses of a script that was running when its
// process stopped: "running" when it was killed, "stopped" when it closed.
func (st state) gone() bool {
	if st.Told {
		return false
	}
	switch st.Status {
	case "stopped":
		return true
	case "running":
		return !alive(st.PID)
	}
	return false
}

// alive reports whether process pid exists (another myelin in the same
// workspace may be running the script). A reused pid reads as alive: the
// script is then told as gone by the process after.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if pid == os.Getpid() {
		return true
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func writeState(root string, st state) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	rel := path.Join(Dir, st.ID+".json")
	f, err := workspace.OpenOwn(root, rel, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("writing the script's state %s: %w", rel, err)
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing the script's state %s: %w", rel, err)
	}
	return nil
}

// readGone reads the states of the scripts a stopped process was running
// in the workspace at root.
func readGone(root string) ([]state, error) {
	if err := workspace.CheckOwnDir(root, Dir); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(root + "/" + Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the background scripts' states: %w", err)
	}
	var gone []state
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") || !e.Type().IsRegular() {
			continue
		}
		st, err := readState(root, path.Join(Dir, e.Name()))
		if err != nil {
			continue // not ours, or half written by a process killed mid-write: nothing to tell
		}
		if st.gone() {
			gone = append(gone, st)
		}
	}
	sort.Slice(gone, func(i, j int) bool { return gone[i].Started.Before(gone[j].Started) })
	return gone, nil
}

func readState(root, rel string) (state, error) {
	var st state
	f, err := workspace.OpenOwn(root, rel, os.O_RDONLY, 0)
	if err != nil {
		return st, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return st, err
	}
	err = json.Unmarshal(b, &st)
	if err == nil && st.ID == "" {
		err = errors.New("no id")
	}
	return st, err
}

// Gone is what conv is told, once, at its next turn, of the scripts that
// were running when the process that ran them stopped: "" when there are
// none. Told records that it was told (call it once the turn has stored
// its prompt); until then Gone says it again.
func (m *Manager) Gone(conv string) (note string, told func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var lines []string
	var ids []state
	for _, st := range m.gone {
		if st.Conversation == conv {
			lines = append(lines, fmt.Sprintf("[myelin: background script %s, started %s, was running when the myelin process that ran it stopped; it is gone and will not wake you. Its journal: %s]",
				st.ID, st.Started.UTC().Format("2006-01-02 15:04:05 UTC"), st.Journal))
			ids = append(ids, st)
		}
	}
	if len(lines) == 0 {
		return "", func() {}
	}
	return strings.Join(lines, "\n"), func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		kept := m.gone[:0]
		for _, st := range m.gone {
			if st.Conversation != conv {
				kept = append(kept, st)
			}
		}
		m.gone = kept
		for _, st := range ids {
			st.Told, st.PID = true, 0
			_ = writeState(m.c.Root, st) // not written: told again by the next process, the lesser harm
		}
	}
}
