package agent

import (
	"context"
	"testing"

	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/history/postgres/pgtest"
)

// The fork's first request is its base's byte for byte on Postgres too
// (TestAForksFirstRequestIsItsBasesRequestByteForByte runs SQLite and
// Memory), on every wire.
func TestAForksFirstRequestIsItsBasesRequestByteForByteOnPostgres(t *testing.T) {
	name, _ := pgtest.Schema(t)
	dsn := pgtest.DSN(t)
	for _, wire := range wires() {
		t.Run(wire, func(t *testing.T) {
			s, err := postgres.Open(context.Background(), dsn, postgres.Options{Schema: name})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			r := newRigOn(t, "sqlite", wire)
			r.agent.Store = s
			if err := r.agent.OpenConversation(context.Background(), r.id); err != nil {
				t.Fatal(err)
			}
			forkSendsItsBasesRequestOn(t, r)
		})
	}
}
