package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/mcp/mcptest"
)

// A session that cannot be started says why in words, and keeps the
// error underneath: a caller tells a cancelled call by errors.Is, never by
// the words.

func TestRestartingUnderACancelledContextWrapsContextCanceled(t *testing.T) {
	srv := httptest.NewServer(mcptest.Handler(false))
	t.Cleanup(srv.Close) // after the Set closes (cleanups run last first)
	stdio := testServer("t")
	web := Server{Name: "web", Type: "http", URL: srv.URL}
	h := start(t, []Server{stdio, web}, Options{})
	for _, s := range h.set.servers {
		t.Run(s.cfg.Name, func(t *testing.T) {
			s.drop() // the next call starts a new session
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err := s.live(ctx)
			if err == nil {
				t.Fatal("starting a session under a cancelled context gave no error")
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("the error %q does not wrap context.Canceled", err)
			}
		})
	}
}

// A reply over the bound is told by its code, not by its words: the
// error the SDK gives the call for it is errReplyTooLarge, and a server's
// own error reply with those words is not.
func TestAReplyOverTheBoundIsToldByItsCode(t *testing.T) {
	srv := httptest.NewServer(mcptest.Handler(false))
	t.Cleanup(srv.Close) // after the Set closes (cleanups run last first)
	web := Server{Name: "web", Type: "http", URL: srv.URL}
	h := start(t, []Server{testServer("t"), web}, Options{MaxReply: 1 << 20})
	for _, s := range h.set.servers {
		t.Run(s.cfg.Name, func(t *testing.T) {
			l, err := s.live(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			sl := &slot{}
			defer sl.finish()
			params := &sdk.CallToolParams{Name: "big", Arguments: map[string]any{"mib": 2}}
			_, err = l.sess.CallTool(withSlot(context.Background(), sl), params)
			if !errors.Is(err, errReplyTooLarge) {
				t.Errorf("a reply of 2 MiB over a bound of 1 MiB gave %v, which is not errReplyTooLarge", err)
			}
		})
	}
	words := &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: errTooLarge + ": the server's own words"}
	if errors.Is(fmt.Errorf("calling: %w", words), errReplyTooLarge) {
		t.Errorf("a server's error reply %q is taken for errReplyTooLarge", words.Message)
	}
}

func TestLoadingAMissingConfigWrapsErrNotExist(t *testing.T) {
	_, err := LoadConfig([]ConfigFile{{Path: filepath.Join(t.TempDir(), "missing.json")}}, nil)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("loading a missing config gave %v, which does not wrap fs.ErrNotExist", err)
	}
}

func TestAConfigThatIsNotJSONWrapsTheSyntaxError(t *testing.T) {
	_, err := ParseConfig("c.json", []byte(`{"mcpServers": nonsense}`), nil)
	var syntax *json.SyntaxError
	if !errors.As(err, &syntax) {
		t.Errorf("parsing a config that is not JSON gave %v, which does not wrap a *json.SyntaxError", err)
	}
}
