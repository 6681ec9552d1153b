package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/myelin-run/myelin/provider/providertest"
)

// Every answer to bad input is a JSON error whose message says what was
// wrong: never a 500, never a panic, whatever the id, the query or the body.
func TestOddInputIsAJSONErrorNeverA500(t *testing.T) {
	f := newFixture(t)
	id := f.newConversation()
	huge := `{"prompt":"` + strings.Repeat("x", DefaultMaxBody) + `"}`
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/v1/conversations/..%2F..%2Fetc", ""},
		{"GET", "/v1/conversations/a%2Fb/messages", ""},
		{"GET", "/v1/conversations/%00/events", ""},
		{"GET", "/v1/conversations/" + strings.Repeat("x", 5000), ""},
		{"GET", "/v1/conversations/" + id + "/messages?after=-1", ""},
		{"GET", "/v1/conversations/" + id + "/messages?after=99999999999999999999", ""},
		{"GET", "/v1/conversations/" + id + "/messages?after=1000000", ""},
		{"GET", "/v1/conversations/" + id + "/events?after=-3", ""},
		{"GET", "/v1/conversations/" + id + "/events?after=1e3", ""},
		{"GET", "/v1/conversations/" + id + "/requests/0", ""},
		{"GET", "/v1/conversations/" + id + "/requests/-1/body", ""},
		{"GET", "/v1/conversations/" + id + "/requests/99999999999999999999", ""},
		{"GET", "/v1/conversations/" + id + "/requests/1", ""},
		{"GET", "/v1/conversations/" + id + "/requests/2/diff?against=x", ""},
		{"GET", "/v1/conversations/" + id + "/requests/1/diff", ""},
		{"GET", "/v1/conversations/nope/requests", ""},
		{"POST", "/v1/conversations/" + id + "/turns", `{"prompt":5}`},
		{"POST", "/v1/conversations/" + id + "/turns", `[]`},
		{"POST", "/v1/conversations/" + id + "/turns", `null`},
		{"POST", "/v1/conversations/" + id + "/turns", `{"prompt":"\ud800"}`},
		{"POST", "/v1/conversations/" + id + "/turns", huge},
		{"POST", "/v1/conversations", `{"x":1}`},
		{"POST", "/v1/conversations", `[`},
		{"POST", "/v1/tools/noop--run/call", `{"a":`},
		{"POST", "/v1/tools/noop--run/call", huge},
		{"POST", "/v1/tools/..%2Fnoop--run/call", `{}`},
		{"GET", "/v1/spills/.myelin/tool-results/none.txt", ""},
		{"GET", "/v1/spills/.myelin/tool-results/none.txt?offset=-5", ""},
		{"GET", "/v1/spills/.myelin/tool-results/none.txt?limit=99999999999999999999", ""},
		{"GET", "/v1/spills/%2Fetc%2Fpasswd", ""},
		{"GET", "/v1/spills/.myelin%2Ftool-results%2F%2E%2E%2F%2E%2E%2Fsecret", ""},
		{"GET", "/v1/spills/.myelin/tool-results/", ""},
		{"POST", "/v1/conversations/" + id + "/turns/x/cancel", `{}`},
	} {
		status, body := f.do(tc.method, tc.path, tc.body)
		var e apiError
		if err := json.Unmarshal(body, &e); status >= 500 || err != nil || (status >= 400 && (e.Error.Message == "" || e.Error.Status != status)) {
			t.Errorf("%s %s: %d %.300s", tc.method, tc.path, status, body)
		}
	}
}

// A path that climbs out of /inspector/ or / does not pass the token check
// as one of the inspector's files.
func TestTheTokenCheckIsNotSkippedByAPathThatClimbsOutOfTheInspector(t *testing.T) {
	f := newFixture(t)
	f.srv.Token = goodToken
	addr := strings.TrimPrefix(f.http.URL, "http://")
	for _, p := range []string{"/inspector/../v1/conversations", "/inspector/..%2Fv1%2Fconversations", "/inspector/%2e%2e/v1/conversations", "/inspector/../openapi.json"} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", p)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		conn.Close()
		if resp.StatusCode == 200 && (strings.Contains(string(body), "conversations") || strings.Contains(string(body), "openapi")) {
			t.Errorf("%s without the token: %d %.200s", p, resp.StatusCode, body)
		}
	}
}

// Two cancels of one turn at once both say how it ended (200, or 409 for
// the one that finds it ended already); a third, after it ended, is 409.
func TestTwoCancelsAtOnceBothAnswerHowTheTurnEnded(t *testing.T) {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	f := newFixture(t, providertest.Step{Text: "never", Hold: hold})
	id := f.newConversation()
	ts := f.startTurn(id, "wait")
	var wg sync.WaitGroup
	got := make([]string, 2)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, body := f.do("POST", "/v1/conversations/"+id+"/turns/"+ts.Turn+"/cancel", "")
			got[i] = fmt.Sprintf("%d %s", status, body)
		}()
	}
	wg.Wait()
	for _, g := range got {
		// the one that comes second may find the turn already ended
		if !(strings.HasPrefix(g, "200 ") && strings.Contains(g, `"cancelled"`)) && !(strings.HasPrefix(g, "409 ") && strings.Contains(g, "already finished (cancelled)")) {
			t.Fatalf("cancels at once: %q", got)
		}
	}
	if status, body := f.do("POST", "/v1/conversations/"+id+"/turns/"+ts.Turn+"/cancel", ""); status != http.StatusConflict {
		t.Fatalf("a cancel after the end: %d %s", status, body)
	}
	// and the conversation takes a new turn at once
	f.fake.Push(providertest.Step{Text: "again"})
	f.startTurn(id, "again")
}
