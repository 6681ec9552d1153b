package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/price"
	"github.com/myelin-run/myelin/result"
)

const historyUsage = `Usage:
  myelin history list [--json] [--workspace DIR] [--store PATH]
      One line per conversation, most recent first: id, last update,
      messages, the first prompt (--json: a JSON array, one object per
      conversation: id, created, updated, messages, first_prompt, and
      parent and parent_call for a subagent's, fork_of and fork_at for a
      fork). A fork says which conversation it continues, from which
      message.
  myelin history show ID [--json] [--prices FILE] [--workspace DIR] [--store PATH]
      The conversation's messages as stored, numbered, with usage and
      cost per request, each turn's cost after it and the whole
      conversation's at the end, where results were cleared from
      requests or a summary stands for older messages, and under each
      agent--delegate call the subagent's conversation (--json: the
      stored records as they are, with "cost" on those that hold a
      request's usage and "turn_cost" on each turn's prompt). First, its
      place in the branch tree: the conversation it is a fork or a
      branch of, from which message, its branches and its forks. Costs
      are at the built-in prices with FILE (default: the user's
      prices.json) over them; a model they do not price costs
      "unknown", never $0 (docs/cost.md).
  myelin history delete ID [--workspace DIR] [--store PATH]
      Delete the conversation: its messages, the requests sent for it,
      the files the store keeps of it, and the spill files of the
      workspace (.myelin/tool-results/) that it names and no parent's or
      subagent's conversation of it does. Refused while a turn of it
      runs. The conversations its subagents had are kept. Says what was
      deleted.
  myelin history fork ID [--at N] [--workspace DIR] [--store PATH]
      Start a new conversation that continues ID from its first N
      messages (default: all), sharing them (nothing is copied), and
      print its id: continue it with run or chat --conversation.
  myelin history rewind ID --at N [--files] [--workspace DIR] [--store PATH]
      Take ID back to its first N messages; what followed is kept as a
      branch, never deleted. --files also puts back the workspace files
      the tools wrote or edited after message N, as they were there (a
      file changed since by someone else is left, and said); without it
      no file changes. Changes made by shell commands, scripts and MCP
      tools are not tracked.
  myelin history undo ID [--files] [--workspace DIR] [--store PATH]
      Take back ID's last turn (rewind to before its last prompt),
      kept as a branch; --files as for rewind.
  myelin history redo ID [--files] [--workspace DIR] [--store PATH]
      Bring back the turns undo (or a rewind to the end) took back last:
      switch to the newest branch that goes on from ID's end; --files
      puts their files forward again.
  myelin history branches ID [--workspace DIR] [--store PATH]
      The branches of ID (what rewinds took back), oldest first.
  myelin history switch ID BRANCH [--files] [--workspace DIR] [--store PATH]
      Make ID go on as BRANCH did; what ID held becomes BRANCH (switch
      again to switch back). --files puts the workspace files the tools
      changed on either side as BRANCH's tools left them.
  myelin history prune --older-than AGE [--dry-run] [--workspace DIR] [--store PATH]
      Remove the files of the workspace's .myelin/tool-results/ last
      changed more than AGE ago (7d, 36h, 90m) that no conversation of
      the store names; says what it removed and what it kept
      (--dry-run: what it would remove). Give the store whose
      conversations wrote them.
`

func historyCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	h, code, done := parseHistory(args, stdout, stderr)
	if done {
		return code
	}
	store, path, code := openHistoryStore(ctx, h.cmd, h.sub, storeChoice(h.store), h.wsDir, h.pos, stdout, stderr)
	if store == nil {
		if h.sub == "list" && code == exitOK && path != "" { // no store yet
			if h.asJSON {
				fmt.Fprintln(stdout, "[]")
			} else {
				fmt.Fprintf(stdout, "no conversations: there is no history store at %s yet; `myelin run PROMPT` starts one\n", path)
			}
		}
		return code
	}
	defer store.Close()
	switch h.sub {
	case "delete":
		return historyDelete(ctx, store, path, h.wsDir, h.pos[0], stdout, stderr)
	case "prune":
		return historyPrune(ctx, store, path, h.wsDir, h.olderThan, h.age, h.dryRun, stdout, stderr)
	case "list":
		return historyList(ctx, store, path, h.asJSON, stdout, stderr)
	case "fork":
		return historyFork(ctx, store, h.pos[0], h.at, stdout, stderr)
	case "rewind":
		return historyRewind(ctx, store, h, stdout, stderr)
	case "branches":
		return historyBranches(ctx, store, h.pos[0], stdout, stderr)
	case "switch":
		return historySwitch(ctx, store, h, stdout, stderr)
	case "undo", "redo":
		return historyUndoRedo(ctx, store, h, stdout, stderr)
	}
	return historyShow(ctx, store, h.pos[0], h.asJSON, h.prices, stdout, stderr)
}

// historySubs are the history commands.
var historySubs = map[string]bool{"list": true, "show": true, "delete": true, "prune": true,
	"fork": true, "rewind": true, "branches": true, "switch": true, "undo": true, "redo": true}

// filesSubs are the history commands that take --files.
var filesSubs = map[string]bool{"rewind": true, "undo": true, "redo": true, "switch": true}

// historyCall is one history command, as its arguments give it.
type historyCall struct {
	sub, cmd  string   // a history command (historySubs); "history " and it
	pos       []string // its arguments: show's and delete's ID
	wsDir     string
	store     string // --store as given
	asJSON    bool
	olderThan string        // prune's --older-than as given
	age       time.Duration // and as parsed
	dryRun    bool
	at        int    // fork's and rewind's --at (fork: -1 for the end)
	files     bool   // rewind's, undo's, redo's and switch's --files
	prices    string // show's --prices FILE
}

// parseHistory reads a history command's subcommand, flags and
// arguments, and checks that they go together. done: the command ends
// here (help, or a usage error), with code.
func parseHistory(args []string, stdout, stderr io.Writer) (h historyCall, code int, done bool) {
	fs := newFlagSet("history")
	wsDir := fs.String("workspace", ".", "the workspace root `DIR`")
	storePath := fs.String("store", "", storeFlagHelp)
	asJSON := fs.Bool("json", false, "print JSON (list: the conversations; show: the messages as stored)")
	olderThan := fs.String("older-than", "", "prune: remove files last changed more than `AGE` ago (7d, 36h, 90m)")
	dryRun := fs.Bool("dry-run", false, "prune: say what would be removed, and remove nothing")
	atFlag := fs.String("at", "", "fork, rewind: the count of messages `N` to keep (fork: default all)")
	prices := fs.String("prices", "", "show: "+pricesFlagHelp)
	files := fs.Bool("files", false, "rewind, undo, redo, switch: put back the workspace files the tools wrote or edited (--workspace is the workspace)")
	if len(args) == 0 {
		return h, usageError(stderr, "history", "want a command: list, show, delete, prune, fork, rewind, undo, redo, branches or switch"), true
	}
	sub, args := args[0], args[1:]
	switch {
	case isHelp(sub):
		printHelp(stdout, historyUsage, fs)
		return h, exitOK, true
	case !historySubs[sub]:
		return h, usageError(stderr, "history", fmt.Sprintf("unknown command %q: want list, show, delete, prune, fork, rewind, undo, redo, branches or switch", sub)), true
	}
	cmd := "history " + sub
	pos, code, done := parseCommand(cmd, historyUsage, fs, args, stdout, stderr)
	if done {
		return h, code, true
	}
	if sub == "list" && len(pos) != 0 {
		return h, usageError(stderr, cmd, fmt.Sprintf("takes no arguments, got %q", pos)), true
	}
	if sub == "switch" && len(pos) != 2 {
		return h, usageError(stderr, cmd, fmt.Sprintf("want a conversation ID and one of its branches, got %d arguments %q", len(pos), pos)), true
	}
	if sub != "list" && sub != "prune" && sub != "switch" && len(pos) != 1 {
		return h, usageError(stderr, cmd, fmt.Sprintf("want one conversation ID, got %d arguments %q", len(pos), pos)), true
	}
	set := explicit(fs)
	var age time.Duration
	switch {
	case sub == "prune" && len(pos) != 0:
		return h, usageError(stderr, cmd, fmt.Sprintf("takes no arguments, got %q", pos)), true
	case sub == "prune" && !set["older-than"]:
		return h, usageError(stderr, cmd, "want --older-than AGE: the files to remove are those last changed more than AGE ago (7d, 36h, 90m)"), true
	case sub == "prune":
		var err error
		if age, err = parseAge(*olderThan); err != nil {
			return h, usageError(stderr, cmd, err.Error()), true
		}
	case set["older-than"] || set["dry-run"]:
		return h, usageError(stderr, cmd, "--older-than and --dry-run go with history prune"), true
	}
	at := -1
	switch {
	case set["at"] && sub != "fork" && sub != "rewind":
		return h, usageError(stderr, cmd, "--at goes with history fork and history rewind"), true
	case sub == "rewind" && !set["at"]:
		return h, usageError(stderr, cmd, "want --at N: the count of messages the conversation keeps (`myelin history show ID` numbers them)"), true
	case set["at"]:
		var err error
		if at, err = parseAt(*atFlag); err != nil {
			return h, usageError(stderr, cmd, err.Error()), true
		}
	}
	if set["files"] && !filesSubs[sub] {
		return h, usageError(stderr, cmd, "--files goes with history rewind, undo, redo and switch"), true
	}
	if set["json"] && sub != "list" && sub != "show" {
		return h, usageError(stderr, cmd, "--json goes with history list and history show"), true
	}
	if set["prices"] && sub != "show" {
		return h, usageError(stderr, cmd, "--prices goes with history show"), true
	}
	return historyCall{sub: sub, cmd: cmd, pos: pos, wsDir: *wsDir, store: *storePath, asJSON: *asJSON, olderThan: *olderThan, age: age, dryRun: *dryRun, at: at, files: *files, prices: *prices}, exitOK, false
}

// historyList prints the store's conversations, most recent first: one
// line each, or a JSON array.
func historyList(ctx context.Context, store history.Store, path string, asJSON bool, stdout, stderr io.Writer) int {
	list, err := store.List(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "myelin history: %v\n", err)
		return exitError
	}
	if asJSON {
		return listJSON(ctx, store, list, stdout, stderr)
	}
	if len(list) == 0 {
		fmt.Fprintf(stdout, "no conversations in %s yet; `myelin run PROMPT` starts one\n", path)
		return exitOK
	}
	for _, c := range list {
		first := ""
		if msgs, err := store.Messages(ctx, c.ID); err == nil {
			first = firstPrompt(msgs)
		}
		if c.Parent != "" {
			first += "\t(subagent of " + c.Parent + ")"
		}
		if note := forkNote(ctx, store, c); note != "" {
			first += "\t(" + note + ")"
		}
		fmt.Fprintf(stdout, "%s\t%s\t%d messages\t%s\n", c.ID, c.Updated.Local().Format(time.DateTime), c.Messages, first)
	}
	return exitOK
}

// historyShow prints conversation id's messages: as stored (JSON, each
// with its cost), or numbered, with each agent--delegate call's subagent
// conversation under it and the costs of its requests and turns, priced
// at the built-in table with the prices file (pricesFile, or the user's)
// over it.
func historyShow(ctx context.Context, store history.Store, id string, asJSON bool, pricesFile string, stdout, stderr io.Writer) int {
	tb, err := price.Load(pricesFile)
	if err != nil {
		fmt.Fprintf(stderr, "myelin history: %v\n", err)
		return exitError
	}
	msgs, err := store.Messages(ctx, id)
	if err != nil {
		fmt.Fprintf(stderr, "myelin history: %v\n", err)
		return exitError
	}
	costs := newShownCosts(tb, msgs)
	if asJSON {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(costs.jsonMessages(msgs)); err != nil {
			fmt.Fprintf(stderr, "myelin history: %v\n", err)
			return exitError
		}
		stdout.Write(buf.Bytes())
		return exitOK
	}
	rec, err := store.Get(ctx, id)
	if err != nil {
		fmt.Fprintf(stderr, "myelin history: %v\n", err)
		return exitError
	}
	kids, err := history.Children(ctx, store, id)
	if err != nil {
		fmt.Fprintf(stderr, "myelin history: %v\n", err)
		return exitError
	}
	if rec.Parent != "" {
		fmt.Fprintf(stdout, "subagent of conversation %s, started by its call %s\n", rec.Parent, rec.ParentCall)
	}
	if err := showTree(ctx, stdout, store, rec); err != nil {
		fmt.Fprintf(stderr, "myelin history: %v\n", err)
		return exitError
	}
	children := map[string][]string{}
	for _, k := range kids {
		children[k.ParentCall] = append(children[k.ParentCall], k.ID)
	}
	showConversation(stdout, msgs, children, costs)
	return exitOK
}

// firstPrompt is the text of a conversation's first message, on one line
// of at most 60 characters; Context records before it are passed over.
func firstPrompt(msgs []history.Message) string {
	for _, m := range msgs {
		if m.IsRecord() {
			continue
		}
		if len(m.Parts) > 0 {
			return oneLine(m.Parts[0].Text, 60)
		}
		return ""
	}
	return ""
}

// oneLine is s with its white space folded to single spaces, at most n
// characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// openHistoryStore opens the store history list and show read: Postgres
// for a postgres:// URL, else SQLite (store's path, or the workspace's at
// wsDir). A SQLite store that is not there is not made: it says there is
// none yet and returns a nil store, with the exit code.
func openHistoryStore(ctx context.Context, cmd, sub, store, wsDir string, pos []string, stdout, stderr io.Writer) (history.Store, string, int) {
	if isPostgres(store) {
		s, name, err := openPostgres(ctx, store)
		if err != nil {
			fmt.Fprintf(stderr, "myelin history: %v\n", err)
			return nil, "", exitError
		}
		return s, name, exitOK
	}
	path, storeInWorkspace := store, store == ""
	if storeInWorkspace {
		abs, err := filepath.Abs(wsDir)
		if err != nil {
			return nil, "", usageError(stderr, cmd, fmt.Sprintf("--workspace %q: %v", wsDir, err))
		}
		if path, err = defaultStore(abs); err != nil {
			fmt.Fprintf(stderr, "myelin %s: %v\n", cmd, err)
			return nil, "", exitError
		}
	}
	// The default store is in the workspace: checked above, and again by
	// the store as it opens (a link planted between the two is refused).
	// Reading makes no store, and deletes nothing (openSQLite).
	s, err := openSQLite(path, storeInWorkspace, false)
	if errors.Is(err, fs.ErrNotExist) {
		// say there is none yet
		if sub == "list" {
			return nil, path, exitOK // there is none yet: the caller says so
		}
		if sub == "prune" {
			fmt.Fprintf(stderr, "myelin history prune: there is no history store at %s: prune keeps the files a store's conversations name, so it needs the store that wrote them (--store)\n", path)
			return nil, "", exitError
		}
		fmt.Fprintf(stderr, "myelin %s: no such conversation %q: there is no history store at %s\n", cmd, pos[0], path)
		return nil, "", exitError
	}
	if err != nil {
		fmt.Fprintf(stderr, "myelin history: %v\n", err)
		return nil, "", exitError
	}
	return s, path, exitOK
}

// listed is a conversation as history list --json prints it.
type listed struct {
	ID          string    `json:"id"`
	Created     time.Time `json:"created"`
	Updated     time.Time `json:"updated"`
	Messages    int       `json:"messages"`
	FirstPrompt string    `json:"first_prompt"`
	Parent      string    `json:"parent,omitempty"`
	ParentCall  string    `json:"parent_call,omitempty"`
	// ForkOf and ForkAt are, on a fork, the conversation whose first
	// ForkAt messages it continues (forkOrigin).
	ForkOf string `json:"fork_of,omitempty"`
	ForkAt *int   `json:"fork_at,omitempty"`
}

// listJSON prints list as a JSON array (an empty one for none), most
// recent first.
func listJSON(ctx context.Context, store history.Store, list []history.Conversation, stdout, stderr io.Writer) int {
	out := make([]listed, 0, len(list))
	for _, c := range list {
		l := listed{ID: c.ID, Created: c.Created, Updated: c.Updated, Messages: c.Messages, Parent: c.Parent, ParentCall: c.ParentCall}
		if base, at := forkOrigin(ctx, store, c); base != "" {
			l.ForkOf, l.ForkAt = base, &at
		}
		if msgs, err := store.Messages(ctx, c.ID); err == nil {
			l.FirstPrompt = firstPrompt(msgs)
		}
		out = append(out, l)
	}
	b, err := result.JSON(out)
	if err != nil {
		fmt.Fprintf(stderr, "myelin history list: %v\n", err)
		return exitError
	}
	fmt.Fprintf(stdout, "%s\n", b)
	return exitOK
}
