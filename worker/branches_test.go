package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/server"
)

// post sends a JSON body to url and returns the status and the body.
func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// eventReader reads one event stream, event by event.
type eventReader struct{ r *bufio.Reader }

// until reads events up to one of type typ and returns its data; a stream
// that ends first fails the test.
func (e eventReader) until(t *testing.T, typ string) string {
	t.Helper()
	got := ""
	for {
		line, err := e.r.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended (%v) before a %s event", err, typ)
		}
		line = strings.TrimSuffix(line, "\n")
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			got = v
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok && got == typ {
			return data
		}
	}
}

func watchOn(t *testing.T, base, id string) eventReader {
	t.Helper()
	resp, err := http.Get(base + "/v1/conversations/" + id + "/events")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return eventReader{bufio.NewReader(resp.Body)}
}

// settled waits until conversation id names no turn queued or running
// (its job is marked done a moment after its turn.finished).
func settled(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base)
		if err != nil {
			t.Fatal(err)
		}
		var c server.ConversationInfo
		err = json.NewDecoder(resp.Body).Decode(&c)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if c.Turn == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("turn %s of %s is still queued or running after 30 s", c.Turn, base)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// With workers, a rewind, undo or switch through any process never races
// a turn: a turn queued (no worker has taken it), running on another
// process's worker, or another writer's claim is a 409, nothing changed.
// Once the conversation is free, a rewind through one process is seen by
// a watcher of another, a turn queued through the first continues the
// rewound conversation, and a switch through the other brings the branch
// back: both branches intact.
func TestWithWorkersARewindNeverRacesATurnAndEveryProcessSeesIt(t *testing.T) {
	_, reopen := open(t)
	hold := make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-hold:
		default:
			close(hold)
		}
	})
	fake := providertest.NewAnthropic(t, providertest.Step{Text: "A"}, providertest.Step{Text: "B", Hold: hold}, providertest.Step{Text: "C"})
	store := reopen()
	front := apiOn(t, store, fake.URL, 0) // runs no turns
	status, body := post(t, front.URL+"/v1/conversations", "")
	var conv server.ConversationInfo
	if err := json.Unmarshal([]byte(body), &conv); err != nil || status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, body)
	}
	id := conv.ID
	base := front.URL + "/v1/conversations/" + id
	w := watchOn(t, front.URL, id)
	refused := func(who, want string) {
		t.Helper()
		for _, c := range []struct{ path, body string }{{"/rewind", `{"at":0}`}, {"/undo", ""}, {"/switch", `{"branch":"` + id + `~1"}`}} {
			status, body := post(t, base+c.path, c.body)
			if c.path == "/switch" && status == http.StatusBadRequest {
				continue // no branch yet: refused before it would write
			}
			if status != http.StatusConflict || !strings.Contains(body, want) {
				t.Errorf("POST %s while %s: %d %s; want 409 naming %s", c.path, who, status, body, want)
			}
		}
	}

	// queued, no worker to take it
	status, body = post(t, base+"/turns", `{"prompt":"a"}`)
	var first server.TurnStarted
	if err := json.Unmarshal([]byte(body), &first); err != nil || status != http.StatusAccepted {
		t.Fatalf("turn a: %d %s", status, body)
	}
	refused("turn a is queued", first.Turn)
	back := apiOn(t, reopen(), fake.URL, 1) // now a worker takes it
	w.until(t, server.EventTurnFinished)
	settled(t, base)

	// running on the other process's worker
	status, body = post(t, base+"/turns", `{"prompt":"b"}`)
	var second server.TurnStarted
	if err := json.Unmarshal([]byte(body), &second); err != nil || status != http.StatusAccepted {
		t.Fatalf("turn b: %d %s", status, body)
	}
	w.until(t, server.EventTurnStarted)
	refused("turn b runs on a worker", second.Turn)
	close(hold)
	w.until(t, server.EventTurnFinished)
	settled(t, base)

	// another writer (a `myelin run` on the same store)
	ctx := context.Background()
	other, err := store.Claim(ctx, id, history.NewHolder(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	refused("another writer holds it", other.Token)
	if err := store.Release(ctx, id, other); err != nil {
		t.Fatal(err)
	}
	if msgs, _ := store.Messages(ctx, id); len(msgs) != 4 {
		t.Fatalf("after the refused writes the conversation holds %d messages, want 4", len(msgs))
	}

	// free: rewound through the front, seen by a watcher of the back
	wb := watchOn(t, back.URL, id)
	status, body = post(t, base+"/rewind", `{"at":2}`)
	var rw server.Rewound
	if err := json.Unmarshal([]byte(body), &rw); err != nil || status != http.StatusOK {
		t.Fatalf("rewind once free: %d %s", status, body)
	}
	if data := wb.until(t, server.EventRewound); !strings.Contains(data, `"branch":"`+rw.Branch.ID+`"`) {
		t.Fatalf("the back's watcher saw the rewind as %s", data)
	}
	if status, body := post(t, base+"/turns", `{"prompt":"c"}`); status != http.StatusAccepted {
		t.Fatalf("turn c: %d %s", status, body)
	}
	wb.until(t, server.EventTurnFinished)
	settled(t, base)
	status, body = post(t, back.URL+"/v1/conversations/"+id+"/switch", `{"branch":"`+rw.Branch.ID+`"}`)
	if status != http.StatusOK {
		t.Fatalf("switch through the back: %d %s", status, body)
	}
	texts := func(id string) string {
		msgs, err := store.Messages(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range msgs {
			out = append(out, m.Text())
		}
		return strings.Join(out, "|")
	}
	if got, kept := texts(id), texts(rw.Branch.ID); got != "a|A|b|B" || kept != "a|A|c|C" {
		t.Fatalf("after the switch the conversation reads %q, its branch %q", got, kept)
	}
}
