package mcp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/workspace"
)

// allocatedBy is the bytes allocated while f ran (runtime.MemStats
// TotalAlloc), the whole process's: what a call costs in memory, at most,
// whatever the collector did meanwhile.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// maxAllocRatio bounds the bytes allocated by a call with a large reply of
// text, as a ratio to the reply: 0.10–0.12 measured (10.8 before), 0.36
// under the race detector, whose own allocations count too.
const maxAllocRatio = 0.5

// A large text reply is decoded in bounded memory: its text goes to a file
// as it is read, which becomes the spill file, so that a call's memory does
// not grow with the reply (issue 26, point 11: 6.5–9.7 times the reply
// before).
func TestALargeTextReplyOverStdioIsReadInBoundedMemory(t *testing.T) {
	h := start(t, []Server{testServer("t")}, Options{})
	if f := h.set.Failures(); f != nil {
		t.Fatal(f)
	}
	const mib = 48
	h.call("t--echo", `{"text":"warm up"}`)
	var text string
	var spill string
	alloc := allocatedBy(func() {
		out := h.call("t--big", `{"mib":48}`)
		text, spill = out.Text, out.SpillPath
	})
	if spill == "" {
		t.Fatalf("no spill file: %.300q", text)
	}
	line := strings.Repeat("x", 63) + "\n"
	if got := h.file(spill); len(got) != mib<<20/len(line)*len(line) || string(got[:64]) != line {
		t.Errorf("the spill file holds %d bytes, want the %d sent", len(got), mib<<20/len(line)*len(line))
	}
	ratio := float64(alloc) / (mib << 20)
	t.Logf("a %d MiB text reply allocated %.1f MiB, %.2f times the reply", mib, float64(alloc)/(1<<20), ratio)
	if ratio > maxAllocRatio {
		t.Errorf("a %d MiB text reply allocated %.1f MiB, %.2f times the reply; want at most %.2f times", mib, float64(alloc)/(1<<20), ratio, maxAllocRatio)
	}
}

// convertIn converts r as call "call_1" with a workspace of its own, and
// gives its output and its spill file's contents.
func convertIn(t *testing.T, r result.Result) (result.Output, string) {
	t.Helper()
	ws, err := workspace.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	now := func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	out := result.One(result.Call{ID: "call_1", Result: r}, result.Env{Store: ws, Now: now})
	spill := ""
	if out.SpillPath != "" {
		data, err := os.ReadFile(filepath.Join(ws.Dir(), out.SpillPath))
		if err != nil {
			t.Fatal(err)
		}
		spill = string(data)
	}
	out.Files = nil // saved under the same names, in two workspaces
	return out, spill
}

// A reply read from its file converts to exactly what the same reply read
// in memory does (result.FromMCP): the text's escapes, surrogates and
// invalid bytes, several blocks, structured content, isError, the head of
// the reply kept for inspection. A reply the file reader does not take
// (an image among the blocks, a result that is not final, a key twice, a
// request, bad JSON) is left to the memory path, and no slot is filled.
func TestASpooledReplyConvertsAsTheSameReplyReadInMemory(t *testing.T) {
	pad := strings.Repeat("x", smallText+10)
	taken := []struct{ name, result string }{
		{"one text block", `{"content":[{"type":"text","text":"` + pad + `"}]}`},
		{"escapes and surrogates", `{"content":[{"text":"a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00 lone \ud800 end \udc00\ud800\u0041` + pad + `","type":"text"}]}`},
		{"invalid UTF-8 in one block", `{"content":[{"type":"text","text":"caf` + "\xe9\xff" + ` ` + pad + `"}]}`},
		{"NUL in one block", `{"content":[{"type":"text","text":"\u0000` + pad + `"}]}`},
		{"several plain blocks", `{"content":[{"type":"text","text":"first\nline"},{"type":"text"},{"type":"text","text":"` + pad + `"}], "isError": true}`},
		{"structured content too", `{"structuredContent":{"n":[1,2.5e3,-0.1,true,null,"s"]},"content":[{"type":"text","text":"` + pad + `","annotations":{"audience":["user"]}}],"_meta":{"k":[{}]}}`},
		{"a final resultType", `{"resultType":"complete","content":[{"type":"text","text":"` + pad + `"}]}`},
	}
	for _, tc := range taken {
		t.Run(tc.name, func(t *testing.T) {
			for _, idFirst := range []bool{true, false} {
				msg := `{"jsonrpc":"2.0","id":7,"result":` + tc.result + "}\n"
				if !idFirst {
					msg = `{"result":` + tc.result + ` , "jsonrpc":"2.0", "id":7}` + "\n"
				}
				sl := &slot{id: mustID(7)}
				resp, err := takeSpooled(strings.NewReader(msg), int64(len(msg)), func(id jsonrpc.ID) *slot {
					if id == sl.id {
						return sl
					}
					return nil
				})
				if err != nil {
					t.Fatalf("id first %v: not taken: %v", idFirst, err)
				}
				if resp.ID != sl.id || string(resp.Result) != string(emptyResult) {
					t.Errorf("the SDK gets %v %s, want id 7 and an empty result", resp.ID, resp.Result)
				}
				got, ok := sl.result()
				if !ok {
					t.Fatal("no result in the slot")
				}
				if _, isFile := got.Data.(result.TextFile); !isFile {
					t.Errorf("the text is a %T, want a result.TextFile", got.Data)
				}
				want, err := result.FromMCP([]byte(tc.result))
				if err != nil {
					t.Fatal(err)
				}
				gotOut, gotSpill := convertIn(t, got)
				wantOut, wantSpill := convertIn(t, want)
				if !reflect.DeepEqual(gotOut, wantOut) {
					t.Errorf("id first %v: converted from the file:\n%+v\nwant, from memory:\n%+v", idFirst, clipOut(gotOut), clipOut(wantOut))
				}
				if gotSpill != wantSpill {
					t.Errorf("id first %v: the spill files differ: %d and %d bytes", idFirst, len(gotSpill), len(wantSpill))
				}
			}
		})
	}
	left := []struct{ name, msg string }{
		{"an image among the blocks", `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + pad + `"},{"type":"image","data":"AAAA","mimeType":"image/png"}]}}`},
		{"a block whose text comes before its other type", `{"jsonrpc":"2.0","id":7,"result":{"content":[{"text":"` + pad + `","type":"other"}]}}`},
		{"several blocks, one not plain", `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"\u0000"},{"type":"text","text":"` + pad + `"}]}}`},
		{"small text, large structured content", `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a"}],"structuredContent":"` + pad + `"}}`},
		{"a result that is not final", `{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","content":[{"type":"text","text":"` + pad + `"}]}}`},
		{"content twice", `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + pad + `"}],"content":[]}}`},
		{"a key in another case", `{"jsonrpc":"2.0","id":7,"Result":{"content":[{"type":"text","text":"` + pad + `"}]}}`},
		{"an error reply", `{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"` + pad + `"}}`},
		{"a request from the server", `{"jsonrpc":"2.0","id":7,"method":"x","result":{"content":[{"type":"text","text":"` + pad + `"}]}}`},
		{"another call's reply", `{"jsonrpc":"2.0","id":8,"result":{"content":[{"type":"text","text":"` + pad + `"}]}}`},
		{"bad JSON", `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + pad + `\x"}]}}`},
		{"a control character in a string", `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + pad + "\t" + `"}]}}`},
		{"more after the message", `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + pad + `"}]}} {}`},
		{"a bad number", `{"jsonrpc":"2.0","id":7,"result":{"isError":01,"content":[{"type":"text","text":"` + pad + `"}]}}`},
	}
	for _, tc := range left {
		t.Run(tc.name, func(t *testing.T) {
			sl := &slot{id: mustID(7)}
			_, err := takeSpooled(strings.NewReader(tc.msg), int64(len(tc.msg)), func(id jsonrpc.ID) *slot {
				if id == sl.id {
					return sl
				}
				return nil
			})
			if err == nil {
				t.Fatalf("taken from the file, want it left to the memory path")
			}
			if _, ok := sl.result(); ok {
				t.Errorf("the slot holds a result though the reply was left (%v)", err)
			}
		})
	}
}

func clipOut(o result.Output) string {
	s := fmt.Sprintf("%+v", o)
	if len(s) > 600 {
		s = s[:300] + " … " + s[len(s)-300:]
	}
	return s
}

func mustID(n int) jsonrpc.ID {
	id, err := jsonrpc.MakeID(float64(n))
	if err != nil {
		panic(err)
	}
	return id
}

// canned is a canned HTTP reply whose body makes its bytes as it is read.
type canned struct {
	media string
	body  func() io.Reader
}

func (c canned) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {c.media}}, Body: io.NopCloser(c.body()), Request: req}, nil
}

// Over HTTP too, a large text reply — a JSON body, or an SSE event — is
// read in bounded memory, its text a file.
func TestALargeTextReplyOverHTTPIsReadInBoundedMemory(t *testing.T) {
	const mib = 48
	sse := func() io.Reader {
		return io.MultiReader(strings.NewReader("id: 1\r\ndata: "), lineOf(7, mib<<20), strings.NewReader("\r\n"))
	}
	for _, tc := range []canned{{"application/json", func() io.Reader { return lineOf(7, mib<<20) }}, {"text/event-stream", sse}} {
		t.Run(tc.media, func(t *testing.T) {
			rt := &roundTripper{base: tc, max: DefaultMaxReply}
			sl := &slot{}
			ctx := withSlot(context.Background(), sl)
			call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"big"}}`
			var got []byte
			var out result.Result
			var ok bool
			alloc := allocatedBy(func() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://mcp.test/", strings.NewReader(call))
				resp, err := rt.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				got, err = io.ReadAll(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				out, ok = sl.result()
			})
			if !ok {
				t.Fatalf("no result taken; the SDK got %.300q", got)
			}
			tf, isFile := out.Data.(result.TextFile)
			if !isFile {
				t.Fatalf("the text is a %T, want a result.TextFile", out.Data)
			}
			defer result.Discard(out)
			if st, err := os.Stat(tf.Path); err != nil || st.Size() != mib<<20 {
				t.Errorf("the text file: %v, want %d bytes", err, mib<<20)
			}
			if !strings.Contains(string(got), `"result":{"content":[]}`) {
				t.Errorf("the SDK got %.300q, want an empty result in place of the text", got)
			}
			ratio := float64(alloc) / (mib << 20)
			t.Logf("a %d MiB text reply allocated %.1f MiB, %.2f times the reply", mib, float64(alloc)/(1<<20), ratio)
			if ratio > maxAllocRatio {
				t.Errorf("a %d MiB text reply allocated %.1f MiB, %.2f times the reply; want at most %.2f times", mib, float64(alloc)/(1<<20), ratio, maxAllocRatio)
			}
		})
	}
}
