package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/result"
)

// Logger is the logger name of the messages a Server sends hosts.
const Logger = "myelin"

// What a host is told of its calls (notifications/message, the logging
// capability), at the level it set with logging/setLevel (the SDK sends
// nothing until a host sets one, and nothing below it):
//
//   - debug: each call's start and end, with its time and whether it
//     failed;
//   - info: a result spilled (the spill file's path, and the sizes) and
//     the payloads a result saved to files;
//   - warning: a call the permission policy (or the host's user) denied,
//     with why.
//
// The messages go to the session whose call it was, as text.

// log sends msg at level to ss, the session of the call run under ctx.
func (s *Server) log(ctx context.Context, ss *sdk.ServerSession, level sdk.LoggingLevel, msg string) {
	if ss == nil {
		return
	}
	_ = ss.Log(ctx, &sdk.LoggingMessageParams{Level: level, Logger: Logger, Data: msg})
}

// logEnd tells ss how call id of name ended: what it spilled or saved,
// then its end.
func (s *Server) logEnd(ctx context.Context, ss *sdk.ServerSession, id, name string, out result.Output, took time.Duration) {
	how := "ended"
	if out.IsError {
		how = "ended with an error"
	}
	if out.SpillPath != "" {
		s.log(ctx, ss, "info", fmt.Sprintf("the result of call %s of %s was %d characters, over its cap: it is kept whole in the workspace file %s, and the host got its head (%d characters with the notice)", id, name, out.Chars, out.SpillPath, utf8.RuneCountInString(out.Text)))
	}
	if len(out.Files) > 0 {
		s.log(ctx, ss, "info", fmt.Sprintf("call %s of %s saved what is not text to the workspace: %s", id, name, strings.Join(out.Files, ", ")))
	}
	// the end comes last: a host has every message of a call with it
	s.log(ctx, ss, "debug", fmt.Sprintf("call %s of %s %s in %v", id, name, how, took.Round(time.Millisecond)))
}
