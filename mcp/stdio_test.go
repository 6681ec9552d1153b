package mcp

import (
	"bufio"
	"errors"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// lineOf gives one JSON-RPC reply line of about n bytes without holding
// it: a reader that makes its bytes as they are read.
func lineOf(id, n int) io.Reader {
	head := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"result":{"content":[{"type":"text","text":"`
	return io.MultiReader(strings.NewReader(head), io.LimitReader(repeatX{}, int64(n)), strings.NewReader(`"}]}}`+"\n"))
}

type repeatX struct{}

func (repeatX) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// A reply over the bound is refused having allocated about the bound, not
// the several times it took while a growing buffer copied itself.
func TestAReplyOverTheBoundTakesAboutTheBoundInMemory(t *testing.T) {
	const max = 32 << 20
	c := &lineConn{}
	br := bufio.NewReaderSize(lineOf(7, 48<<20), 64<<10)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	msgs, err := c.next(br, max)
	runtime.ReadMemStats(&after)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("got %v, %v", msgs, err)
	}
	resp, ok := msgs[0].(*jsonrpc.Response)
	if !ok || resp.Error == nil {
		t.Fatalf("got %#v, want an error reply", msgs[0])
	}
	if id, _ := jsonrpc.MakeID(float64(7)); resp.ID != id {
		t.Errorf("the error reply's id is %v, want 7", resp.ID)
	}
	if !errors.Is(resp.Error, errReplyTooLarge) {
		t.Errorf("the error reply %#v has not the code of a reply over the bound (%d)", resp.Error, codeTooLarge)
	}
	if !strings.HasPrefix(resp.Error.Error(), errTooLarge) {
		t.Errorf("the error reply says %q, want it to start %q", resp.Error, errTooLarge)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > max*3/2 {
		t.Errorf("reading a 48 MiB line over a 32 MiB bound allocated %.1f MiB, want at most 1.5 times the bound", float64(alloc)/(1<<20))
	}
}
