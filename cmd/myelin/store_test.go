package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/myelin-run/myelin/history/postgres/pgtest"
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
