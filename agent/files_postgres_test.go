package agent

import (
	"context"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/history/postgres/pgtest"
)

// The whole feature on Postgres: a turn on host A spills its results and
// keeps the files in the database; host B, with its own opening of the
// database and an empty workspace, continues the conversation, and the
// model's ready calls give there the text they give on A.
func TestAConversationResumedOnAnotherHostOfAPostgresStoreReadsItsSpillFilesAsTheModelSawThem(t *testing.T) {
	name, _ := pgtest.Schema(t)
	dsn := pgtest.DSN(t)
	open := func() history.Store {
		s, err := postgres.Open(context.Background(), dsn, postgres.Options{Schema: name})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	resumedOnAnotherWorkspace(t, open(), open())
}
