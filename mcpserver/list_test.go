package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

// tools makes n tools named test--t0, test--t1, ...
func tools(n int) []*tool.Tool {
	out := make([]*tool.Tool, n)
	for i := range out {
		out[i] = rawTool(fmt.Sprintf("test--t%d", i), result.Result{Data: "ok"})
	}
	return out
}

// tools/list is paged by Config.PageSize: a host follows the cursor from
// page to page and gets every tool once, in the registry's order.
func TestToolsListIsPagedWithACursor(t *testing.T) {
	reg := registry(t, tools(5)...)
	s := New(Config{Tools: reg, PageSize: 2})
	for _, v := range []string{hostVersion, latestVersion} {
		cs := connectAt(t, s, nil, v)
		var names []string
		cursor, pages := "", 0
		for {
			res, err := cs.ListTools(context.Background(), &sdk.ListToolsParams{Cursor: cursor})
			if err != nil {
				t.Fatalf("%s: listing the tools from cursor %q: %v", v, cursor, err)
			}
			if len(res.Tools) > 2 {
				t.Errorf("%s: a page holds %d tools, over the page size 2", v, len(res.Tools))
			}
			for _, tl := range res.Tools {
				names = append(names, tl.Name)
			}
			pages++
			if cursor = res.NextCursor; cursor == "" || pages > 5 {
				break
			}
		}
		if pages != 3 || !slices.Equal(names, reg.Names()) {
			t.Errorf("%s: %d pages gave %v, want 3 pages of %v", v, pages, names, reg.Names())
		}
	}
}

// ping is answered.
func TestPingIsAnswered(t *testing.T) {
	s := New(Config{})
	for _, v := range []string{hostVersion, latestVersion} {
		if err := connectAt(t, s, nil, v).Ping(context.Background(), nil); err != nil {
			t.Errorf("%s: ping: %v", v, err)
		}
	}
}

// SetTools tells a connected host the list changed
// (notifications/tools/list_changed), and the host lists the new set:
// the tools added, those gone left out.
func TestSetToolsTellsTheHostAndItListsTheNewSet(t *testing.T) {
	s := New(Config{Tools: registry(t, tools(2)...)})
	changed := make(chan struct{}, 8)
	cs := connectAt(t, s, &sdk.ClientOptions{ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} }}, hostVersion)
	next := registry(t, append(tools(3)[1:], rawTool("test--new", result.Result{}))...)
	s.SetTools(next)
	receive(t, changed, "notifications/tools/list_changed")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, next.Names()) {
		t.Errorf("after SetTools the host lists %v, want %v", names, next.Names())
	}
	if got := call(t, cs, "test--new", nil); got.IsError {
		t.Errorf("the new tool's call failed: %s", textOf(got))
	}
}
