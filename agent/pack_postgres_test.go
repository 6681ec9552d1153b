package agent

import (
	"context"
	"fmt"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/history/postgres/pgtest"
	"github.com/myelin-run/myelin/provider/providertest"
)

// The pack on Postgres: the running process, a restarted one (a store
// opened afresh) and a whole read send the same bytes, over repacks
// (written by the review of slice 3).
func TestAPackedViewOnPostgresReadsAsTheRows(t *testing.T) {
	ctx := context.Background()
	name, _ := pgtest.Schema(t)
	dsn := pgtest.DSN(t)
	open := func() *postgres.Store {
		s, err := postgres.Open(ctx, dsn, postgres.Options{Schema: name})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	r := newRigOn(t, "sqlite", "anthropic")
	r.agent.Store = open()
	if err := r.agent.OpenConversation(ctx, r.id); err != nil {
		t.Fatal(err)
	}
	r.agent.ContextWindow = 100_000_000
	r.srv.Push(providertest.Step{Text: "first"})
	r.turn("turn one")
	send := r.sent
	var last packID
	for step := range 3 {
		appendLongConversation(t, r)
		r.srv.Push(providertest.Step{Text: fmt.Sprint("packed ", step)})
		r.turn(fmt.Sprint("turn ", step))
		m, _, err := history.ReadMarked(ctx, r.agent.Store, r.id)
		if err != nil {
			t.Fatal(err)
		}
		pm, err := readMark(m.Facts)
		if err != nil || pm.id == last || pm.at >= m.From {
			t.Fatalf("step %d: not packed again (%v)", step, err)
		}
		last = pm.id
		running := send(r.agent)
		fresh := r.agent.Clone()
		fresh.packs.Store(&packs{}) // a restarted process: nothing unpacked
		fresh.Store = open()
		restarted := send(fresh)
		if len(fresh.packsOf().m) != 1 {
			t.Fatal("the restarted agent did not unpack")
		}
		whole := r.agent.Clone()
		whole.packs.Store(&packs{})
		whole.Store = unmarked{open()}
		read := send(whole)
		if running != read || restarted != read {
			t.Fatalf("step %d: running %v, restarted %v equal to the rows' request", step, running == read, restarted == read)
		}
	}
}
