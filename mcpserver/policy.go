package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/approval"
	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

// What a host is shown of the workspace is what the permission policy
// lets it read (the Gate, SPEC §14): each way a host learns of a
// workspace file is checked as the workspace tool call it stands for.
//
//   - resources/read of a file is the workspace--read of its path
//     (mayRead); what the policy asks is put to the host's user.
//   - resources/list shows a result file's name, path and size: it is
//     listed only when a workspace--list of .myelin/tool-results and a
//     workspace--read of the file are both allowed without asking anyone
//     (mayList). A list is the same for every host and is made with no
//     host's request waiting on it, so it cannot ask, and it takes no
//     host's "yes for this session": it shows what the rules and the
//     defaults allow. A file the policy asks about is not listed (a
//     host still reads it by its URI, which asks); one hidden is never
//     added to the SDK's list, so no notifications/resources/list_changed
//     tells of it either.
//   - resources/subscribe of a file:// URI tells its subscriber when the
//     file changes, appears or goes away: it is taken only when a
//     workspace--read of the path is allowed without asking (maySubscribe,
//     checked under the subscriber's session, so that a Gate that keeps
//     a "yes for this session" for it counts that; approval.Gate keeps
//     none where a rule asks about workspace--read — it asks every time
//     — so under it such a path is never subscribed to).
//     A subscription asks no one: a question about watching a file's
//     size and time would be one more prompt for the person, who could
//     not tell it from a read; a path the policy asks about is refused,
//     saying so. A subscribed directory's size and time change as its
//     entries come and go, which is what a workspace--list of it shows:
//     they are watched only when that is allowed without asking
//     (mayListDir), else only its being a directory is.
//
// A read or a subscription is decided by the path alone, before the
// file is looked at, so that a refusal says the same whether the file
// is there or not; then, when the path leads through a symbolic link
// to another path in the workspace (as the read and the stamp follow
// it), that path is checked too, so that a link to a file the policy
// hides does not read or watch it under the link's own name. Such a
// refusal does not name where the link leads, but it does tell that the
// link is there (a check by the path alone could not see a link). A
// subscribed path that comes to lead through a link after it was taken
// (made, or a link changed) is stamped as "hidden" when the link's
// target may not be read without asking, for no host's session
// (stamp). The path checked is resolved before the file is opened: a
// link changed between the two is the race any check by name has.
// Conversations (myelin://conversations/{id}) are not checked: no tool
// call stands for them; they are offered by the choice of whoever runs
// the server (Config.Store; `--no-conversation-resources`), and docs/mcp.md
// says so. The templates name the workspace's root and no file, and
// completion is served only for the conformance fixtures, so neither
// shows one.

// readTool is the tool a read of a workspace file stands for.
const readTool = "workspace--read"

// listTool is the tool the resource list of result files stands for.
const listTool = "workspace--list"

// listSession is the approval session of the resource list's checks: no
// host's, so that no host's "yes for this session" widens what every
// host is shown.
const listSession = "mcp: the resource list"

// mayRead checks a host's read of the workspace file rel as the
// workspace--read call it stands for, against the server's Gate: a host
// may hand what it reads to its model (a resource the model reads), so
// a policy that denies workspace--read, or asks about it, holds for
// resources too. What the policy asks is put to the host's user as for a
// call (Asker), where the protocol lets a read ask.
func (s *Server) mayRead(ctx context.Context, ss *sdk.ServerSession, rel string) error {
	rul, err := s.check(hostContext(ctx, ss), readTool, rel, false)
	switch {
	case err != nil:
		return fmt.Errorf("checking the read of %s against the permission policy: %w", rel, err)
	case !rul.Allowed():
		return refused("%s is read as a %s call, which was not allowed: %s", rel, readTool, why(rul))
	}
	return nil
}

// mayReachTarget checks, as mayRead does (or, for a subscription, as
// maySubscribe does: without asking anyone), the path rel really reaches
// when that is another (linkTarget): with the same words whether the
// target is there or not, and not naming it.
func (s *Server) mayReachTarget(ctx context.Context, ss *sdk.ServerSession, rel string, subscription bool) error {
	if s.cfg.Gate == nil {
		return nil
	}
	real := s.linkTarget(rel)
	if real == rel {
		return nil
	}
	what, refusal := "read of", "was not allowed"
	if subscription {
		what, refusal = "subscription to", "is not allowed without asking, so its changes are not told"
	}
	rul, err := s.check(hostContext(ctx, ss), readTool, real, subscription)
	switch {
	case err != nil:
		return fmt.Errorf("checking the %s %s, where %s leads, against the permission policy: %w", what, real, rel, err)
	case !rul.Allowed():
		return refused("%s leads through a symbolic link to a path whose %s call %s", rel, readTool, refusal)
	}
	return nil
}

// linkHidden reports whether rel leads through a symbolic link to a
// path a workspace--read of which is not allowed without asking, for no
// host's session: a subscription's stamp then tells nothing of it.
func (s *Server) linkHidden(ctx context.Context, rel string) bool {
	if s.cfg.Gate == nil {
		return false
	}
	real := s.linkTarget(rel)
	return real != rel && !s.mayList(ctx, real)
}

// linkTarget is the workspace-relative path rel reaches with the
// symbolic links along it followed, as the workspace tools resolve a path
// (workspace.Resolve). It is rel itself when no link leads elsewhere, or
// when one leads out of the workspace or too many are followed (a read
// refuses those: os.Root).
func (s *Server) linkTarget(rel string) string {
	real, err := s.cfg.Workspace.Resolve(rel)
	if err != nil || real == "." {
		return rel
	}
	return real
}

// maySubscribe checks a host's subscription to the workspace file rel
// (there or not) as the workspace--read call it stands for, without
// asking anyone; the error says why it is refused.
func (s *Server) maySubscribe(ctx context.Context, ss *sdk.ServerSession, rel string) error {
	rul, err := s.check(hostContext(ctx, ss), readTool, rel, true)
	switch {
	case err != nil:
		return fmt.Errorf("checking the subscription to %s against the permission policy: %w", rel, err)
	case rul.Record.By == approval.ByNobody:
		return refused("%s is read as a %s call, which the permission policy asks about (%s), and a subscription asks no one: its updates would tell when the file changes; a resources/read of it asks", rel, readTool, askedBy(rul))
	case !rul.Allowed():
		return refused("%s is read as a %s call, which was not allowed, so its changes are not told either: %s", rel, readTool, why(rul))
	}
	return nil
}

// mayList reports whether the result file rel may be listed, its
// directory's listing allowed (mayListResults): whether a
// workspace--read of it is allowed without asking. An error of the Gate
// hides the file.
func (s *Server) mayList(ctx context.Context, rel string) bool {
	if s.cfg.Gate == nil {
		return true
	}
	rul, err := s.check(approval.WithSession(ctx, listSession), readTool, rel, true)
	return err == nil && rul.Allowed()
}

// mayListResults reports whether the result files' directory may be
// listed at all: a workspace--list of it allowed without asking.
func (s *Server) mayListResults(ctx context.Context) bool {
	return s.mayListDir(ctx, workspace.ResultsDir)
}

// mayListDir reports whether a workspace--list of the directory rel is
// allowed without asking, for no host's session: the list's, and a
// subscribed directory's changes, which tell of its entries.
func (s *Server) mayListDir(ctx context.Context, rel string) bool {
	if s.cfg.Gate == nil {
		return true
	}
	rul, err := s.check(approval.WithSession(ctx, listSession), listTool, rel, true)
	return err == nil && rul.Allowed()
}

// check puts the call of name (a workspace tool taking a path) on rel to
// the Gate, asking no one when noAsk; with no Gate, everything is
// allowed.
func (s *Server) check(ctx context.Context, name, rel string, noAsk bool) (tool.Ruling, error) {
	if s.cfg.Gate == nil {
		return tool.Ruling{Record: permission.Record{Decision: permission.Allow.String()}}, nil
	}
	t := &tool.Tool{Name: name, ReadOnly: true}
	if reg := s.registry(); reg != nil && reg.Get(name) != nil {
		t = reg.Get(name)
	}
	input, _ := json.Marshal(map[string]string{"path": rel})
	return s.cfg.Gate.Check(ctx, tool.Question{Tool: t, NoAsk: noAsk, Call: tool.Call{ID: "resource_" + callID(), Name: name, Input: input}})
}

// hostContext is ctx of a check for the host of session ss: its session
// for the Asker, and its approval session, as its calls have (tools.go),
// so that its user's "yes for this session" holds for its session alone.
func hostContext(ctx context.Context, ss *sdk.ServerSession) context.Context {
	return approval.WithSession(withSession(ctx, ss), "mcp:"+sessionID(ss))
}

// why is what a denial says: the Gate's words, else the record's reason.
func why(rul tool.Ruling) string {
	if rul.Denial != "" {
		return rul.Denial
	}
	return rul.Record.Reason
}

// askedBy names what asks in a ruling of a question no one was asked:
// its rule, else the default.
func askedBy(rul tool.Ruling) string {
	if rul.Record.Rule != "" {
		return "rule " + rul.Record.Rule
	}
	return "by default"
}
