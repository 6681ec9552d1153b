package main

import (
	"context"
	"os"
	"strings"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
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
	path, inWorkspace := store, store == ""
	if inWorkspace {
		var err error
		if path, err = defaultStore(wsDir); err != nil {
			return nil, "", err
		}
	}
	s, err := history.OpenSQLiteWith(path, history.SQLiteOptions{NoFollow: inWorkspace})
	if err != nil {
		return nil, "", err
	}
	return s, path, nil
}
