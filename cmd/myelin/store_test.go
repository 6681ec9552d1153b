package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/myelin-run/myelin/history"

	"github.com/myelin-run/myelin/history/postgres/pgtest"
	"github.com/myelin-run/myelin/history/sqlite"
	"github.com/myelin-run/myelin/mcp/mcptest"
	"github.com/myelin-run/myelin/provider/providertest"
)

func TestStoreIsPostgresOnlyForAPostgresURL(t *testing.T) {
	for _, tc := range []struct {
		store string
		pg    bool
	}{
		{"postgres://me@db:5432/myelin", true},
		{"postgresql://me@db/myelin?sslmode=require", true},
		{"", false},
		{"history.db", false},
		{"/var/lib/myelin/postgres.db", false},
		{"./postgres://x", false},
		{"mysql://me@db/myelin", false},
	} {
		if got := isPostgres(tc.store); got != tc.pg {
			t.Errorf("isPostgres(%q) = %v, want %v", tc.store, got, tc.pg)
		}
	}
}

func TestMyelinStoreGivesTheStoreWhenTheFlagDoesNot(t *testing.T) {
	t.Setenv(storeEnv, "postgres://me@db/myelin")
	if got := storeChoice(""); got != "postgres://me@db/myelin" {
		t.Fatalf("storeChoice(\"\") = %q", got)
	}
	if got := storeChoice("h.db"); got != "h.db" {
		t.Fatalf("the flag did not win: %q", got)
	}
	t.Setenv(storeEnv, "")
	if got := storeChoice(""); got != "" {
		t.Fatalf("storeChoice(\"\") with no variable = %q; want the workspace's store", got)
	}
}

// run --store postgres://... keeps the conversation in Postgres (none in
// the workspace), and history list and show read it there — also through
// MYELIN_STORE.
func TestRunAndHistoryUseAPostgresStore(t *testing.T) {
	_, dsn := pgtest.Schema(t)
	dir := workspaceWith(t, map[string]string{"a.txt": "alpha\n"})
	fakeAnthropic(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "workspace--read", Input: `{"path":"a.txt"}`}}},
		providertest.Step{Text: "done"},
		providertest.Step{Text: "again"})
	_, errOut, code := cli(t, "run", "--workspace", dir, "--store", dsn, "read a.txt please")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	id := conversationID(t, errOut)
	if _, err := os.Stat(filepath.Join(dir, ".myelin", "history.db")); !os.IsNotExist(err) {
		t.Fatalf("a SQLite store was made in the workspace: %v", err)
	}
	out, errOut, code := cli(t, "history", "list", "--store", dsn)
	if code != 0 || !strings.HasPrefix(out, id+"\t") || !strings.Contains(out, "\t4 messages\tread a.txt please") {
		t.Fatalf("list: exit %d %q %s", code, out, errOut)
	}
	t.Setenv(storeEnv, dsn)
	out, _, code = cli(t, "history", "show", id)
	if code != 0 || !strings.Contains(out, "[tool result toolu_1]\n     1\talpha") {
		t.Fatalf("show through %s: exit %d %q", storeEnv, code, out)
	}
	if _, errOut, code := cli(t, "run", "--workspace", dir, "--continue", "and again"); code != 0 || conversationID(t, errOut) != id {
		t.Fatalf("--continue through %s: exit %d %s", storeEnv, code, errOut)
	}
}

// A Postgres store that cannot be reached stops the command with an error
// naming the server, not the password.
func TestAnUnreachablePostgresStoreIsAClearError(t *testing.T) {
	_, errOut, code := cli(t, "history", "list", "--store", "postgres://me:s3cret@127.0.0.1:1/myelin?connect_timeout=5")
	if code != exitError || !strings.Contains(errOut, "history store postgres://me@127.0.0.1:1/myelin: cannot connect") || strings.Contains(errOut, "s3cret") {
		t.Fatalf("exit %d, %q", code, errOut)
	}
}

// serve --store postgres://... runs its turns on the Postgres store: the
// conversation and each request as sent are kept there.
func TestServeRunsATurnOnAPostgresStore(t *testing.T) {
	name, dsn := pgtest.Schema(t)
	id := serveATurn(t, "--store", dsn)
	out, errOut, code := cli(t, "history", "list", "--store", dsn)
	if code != 0 || !strings.HasPrefix(out, id+"\t") || !strings.Contains(out, "\t4 messages\twhat does a.txt say?") {
		t.Fatalf("list: exit %d %q %s", code, out, errOut)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var requests int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{name, "requests"}.Sanitize()+` WHERE conversation = $1`, id).Scan(&requests); err != nil || requests != 2 {
		t.Fatalf("%d requests kept in Postgres (%v); want the turn's 2", requests, err)
	}
}

// A --store that looks like a URL but not a postgres:// one — a slash
// short, capitals, another scheme — is refused, naming what is wanted,
// and makes no SQLite store under a directory named after the scheme (a
// typo in MYELIN_STORE would otherwise give each host a history of its
// own, silently). A path that only contains such text is a path.
func TestAStoreThatLooksLikeAnotherURLIsRefusedNotMadeAFile(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, store := range []string{"postgres:/db.internal/myelin", "Postgres://me@db/myelin", "postgress://me:s3cret@db/myelin", "mysql://me@db/myelin", "sqlite:///var/h.db"} {
		s, _, err := openSessionStore(context.Background(), store, t.TempDir())
		if err == nil {
			s.Close()
			t.Errorf("--store %q opened a store", store)
			continue
		}
		if !strings.Contains(err.Error(), "is not a postgres:// or postgresql:// URL") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("--store %q: %v; want it refused, without the password", store, err)
		}
	}
	if made, _ := filepath.Glob("*"); len(made) != 0 {
		t.Fatalf("made %v", made)
	}
	for _, path := range []string{"./postgres:/x/h.db", "h.db", "C:/h.db"} {
		s, _, err := openSessionStore(context.Background(), path, t.TempDir())
		if err != nil {
			t.Fatalf("--store %q: %v", path, err)
		}
		s.Close()
	}
}

// storeFilesOf is what the workspace's .myelin directory holds of the
// store: each of history.db and its -wal, -shm, -journal that is there,
// by name, with its bytes.
func storeFilesOf(t *testing.T, ws string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, suffix := range storeFiles {
		b, err := os.ReadFile(filepath.Join(ws, ".myelin", "history.db"+suffix))
		if err == nil {
			out["history.db"+suffix] = string(b)
		}
	}
	return out
}

// liveLog is the write-ahead log of the workspace's store holding
// conversation "c" and its one message, as it is while the store is open
// (the conversation is in the log, not yet in the file): as a process
// killed in the middle of its turn leaves it.
func liveLog(t *testing.T, ws string) []byte {
	t.Helper()
	path := filepath.Join(ws, ".myelin", "history.db")
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "c", history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "the last turn"}}}); err != nil {
		t.Fatal(err)
	}
	wal, err := os.ReadFile(path + "-wal")
	if err != nil || len(wal) == 0 {
		t.Fatalf("the store's log while it is open: %d bytes, %v", len(wal), err)
	}
	return wal
}

// The case: a history.db cut to 0 bytes beside its -wal (the last
// turn's frames). `history list` — a command that only reads — made a new
// empty store and deleted the log, and `run` then started a new
// conversation in it. Every command now refuses it, saying what it found
// and how to recover, and leaves the files as they were; the same for a
// log without its store file (`history list` said there was no store).
func TestAStoreCutToNothingBesideItsLogIsRefusedByEveryCommandAndKept(t *testing.T) {
	for _, tc := range []struct {
		name  string
		make  func(t *testing.T, ws string, wal []byte)
		wants []string
	}{
		{"an empty history.db beside its log", func(t *testing.T, ws string, wal []byte) {
			writeStoreFile(t, ws, "history.db", nil)
			writeStoreFile(t, ws, "history.db-wal", wal)
		}, []string{"history.db is an empty file (0 bytes) beside", "history.db-wal (", "nothing was changed", "may be in its write-ahead log"}},
		{"a log without its history.db", func(t *testing.T, ws string, wal []byte) {
			writeStoreFile(t, ws, "history.db-wal", wal)
		}, []string{"history.db is not there, but", "history.db-wal (", "not taken for a new one"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := workspaceWith(t, map[string]string{"a.txt": "alpha\n"})
			wal := liveLog(t, ws)
			for _, suffix := range storeFiles {
				os.Remove(filepath.Join(ws, ".myelin", "history.db"+suffix))
			}
			tc.make(t, ws, wal)
			before := storeFilesOf(t, ws)
			srv := fakeAnthropic(t, providertest.Step{Text: "a new conversation"})
			for _, args := range [][]string{
				{"history", "list", "--workspace", ws},
				{"history", "show", "c", "--workspace", ws},
				{"run", "--workspace", ws, "hello"},
				{"history", "list", "--workspace", ws}, // after run, still
			} {
				out, errOut, code := cli(t, args...)
				if code == exitOK {
					t.Errorf("%q: exit 0, %q", args, out)
				}
				for _, want := range tc.wants {
					if !strings.Contains(errOut, want) {
						t.Errorf("%q: stderr %q does not say %q", args, errOut, want)
					}
				}
				if after := storeFilesOf(t, ws); !reflect.DeepEqual(after, before) {
					t.Fatalf("after %q the store's files changed: %v, before %v", args, sizesOf(after), sizesOf(before))
				}
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("run asked the model %d times", n)
			}
		})
	}
}

// history list and show in a workspace without a store make none, nor
// its directory; run makes it.
func TestOnlyACommandThatWritesMakesAStore(t *testing.T) {
	ws := workspaceWith(t, map[string]string{"a.txt": "alpha\n"})
	out, errOut, code := cli(t, "history", "list", "--workspace", ws)
	if code != exitOK || !strings.Contains(out, "no conversations: there is no history store at") {
		t.Errorf("list: exit %d, %q %q", code, out, errOut)
	}
	if _, errOut, code := cli(t, "history", "show", "x", "--workspace", ws); code != exitError || !strings.Contains(errOut, "there is no history store at") {
		t.Errorf("show: exit %d, %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(ws, ".myelin")); !os.IsNotExist(err) {
		t.Fatalf("reading made .myelin: %v", err)
	}
	fakeAnthropic(t, providertest.Step{Text: "hi"})
	if _, errOut, code := cli(t, "run", "--workspace", ws, "hello"); code != exitOK {
		t.Fatalf("run: exit %d, %s", code, errOut)
	}
	if fi, err := os.Stat(filepath.Join(ws, ".myelin", "history.db")); err != nil || fi.Size() == 0 {
		t.Fatalf("run made no store: %v %v", fi, err)
	}
}

func writeStoreFile(t *testing.T, ws, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(ws, ".myelin", name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// sizesOf is files by name and size, for a failure message.
func sizesOf(files map[string]string) map[string]int {
	out := map[string]int{}
	for name, b := range files {
		out[name] = len(b)
	}
	return out
}

// A run whose store cannot open starts no MCP server (their commands
// run, an approval may be asked): the store opens beside the making of
// the workspace's tools, and the servers wait for it (a review found
// them started beside it).
func TestAStoreThatCannotOpenStartsNoMCPServer(t *testing.T) {
	dir := t.TempDir()
	mark := filepath.Join(dir, "server-started")
	exe, env := mcptest.Command()
	config, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"s": map[string]any{
		"command": "sh", "args": []string{"-c", `touch "$1"; exec "$0"`, exe, mark}, "env": env}}})
	cf := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(cf, config, 0o644); err != nil {
		t.Fatal(err)
	}
	fakeAnthropic(t)
	_, errOut, code := cli(t, "run", "--workspace", dir, "--store", "mysql://me@db/x", "--mcp-config", cf, "hello")
	if code == exitOK || !strings.Contains(errOut, "is not a postgres://") {
		t.Fatalf("exit %d, stderr %q; want the store's error", code, errOut)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Errorf("an MCP server was started for a run whose store could not open (stderr %q)", errOut)
	}
}
