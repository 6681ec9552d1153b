package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/history/sqlite"
)

// storeEnv names the environment variable that gives --store when the flag
// is not set: a path (SQLite) or a postgres:// URL.
const storeEnv = "MYELIN_STORE"

// storeFlagHelp is the help of every command's --store flag.
const storeFlagHelp = "the history store: a SQLite file `PATH`, or a postgres://user@host:port/database URL for a store shared by several processes and hosts (default $MYELIN_STORE, else WORKSPACE/.myelin/history.db)"

// storeChoice is the --store flag's value, else $MYELIN_STORE's ("": the
// workspace's own SQLite store).
func storeChoice(flag string) string {
	if flag != "" {
		return flag
	}
	return os.Getenv(storeEnv)
}

// isPostgres reports whether a --store value names a Postgres database
// (a postgres:// or postgresql:// URL) rather than a SQLite file.
func isPostgres(store string) bool {
	return strings.HasPrefix(store, "postgres://") || strings.HasPrefix(store, "postgresql://")
}

// redactedStore is a --store value to show: a URL's password (after the
// user's colon, before the @) replaced.
func redactedStore(store string) string {
	scheme := strings.Index(store, "://")
	at := strings.LastIndex(store, "@")
	if scheme < 0 || at < scheme {
		return store
	}
	userinfo := store[scheme+3 : at]
	if c := strings.Index(userinfo, ":"); c >= 0 {
		return store[:scheme+3] + userinfo[:c] + ":xxxxx" + store[at:]
	}
	return store
}

// looksLikeURL reports whether a --store value that is not a Postgres URL
// starts as a URL does: a scheme of two letters or more (a drive letter is
// a path), a colon and a slash — a typo of one, or another database's.
func looksLikeURL(store string) bool {
	colon := strings.Index(store, ":/")
	if colon < 2 {
		return false
	}
	for i, r := range store[:colon] {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if !letter && (i == 0 || !(r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.')) {
			return false
		}
	}
	return true
}

// openPostgres opens the Postgres store dsn names; it returns the store
// and how to name it to people (the URL without its password).
func openPostgres(ctx context.Context, dsn string) (history.Store, string, error) {
	s, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		return nil, "", err
	}
	return s, s.String(), nil
}

// openSessionStore opens the store of run, chat and serve: Postgres for a
// postgres:// URL; else SQLite at the path, or, when store is "", in the
// workspace at wsDir — checked here, and again by the store as it opens
// (a link planted between the two is refused). It returns the store and
// where it is, for people.
func openSessionStore(ctx context.Context, store, wsDir string) (history.Store, string, error) {
	if isPostgres(store) {
		return openPostgres(ctx, store)
	}
	if looksLikeURL(store) {
		// made a SQLite file under a directory named after the scheme, a
		// typo would give each host a history of its own, silently
		return nil, "", fmt.Errorf("--store %q is not a postgres:// or postgresql:// URL (the scheme is written in small letters, with two slashes); for a SQLite store give a path (./NAME for one that looks like a URL)", redactedStore(store))
	}
	path, inWorkspace := store, store == ""
	if inWorkspace {
		var err error
		if path, err = defaultStore(wsDir); err != nil {
			return nil, "", err
		}
	}
	s, err := openSQLite(path, inWorkspace, true)
	if err != nil {
		return nil, "", err
	}
	return s, path, nil
}

// openSQLite opens the SQLite store at path for a command. Only a command
// that writes (create: run, chat, serve) makes one, and only where nothing
// is there — no file, no -wal, -shm or -journal beside it; a command that
// only reads (history) opens a store that is there, and where none is,
// makes nothing and returns an error wrapping fs.ErrNotExist. Anything
// else at path is refused by the store, saying what was found and how to
// recover it; nothing is deleted. A store in the workspace (inWorkspace)
// follows no symbolic link.
func openSQLite(path string, inWorkspace, create bool) (*sqlite.Store, error) {
	return sqlite.OpenWith(path, sqlite.Options{NoFollow: inWorkspace, Existing: !create})
}
