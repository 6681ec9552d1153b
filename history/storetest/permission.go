package storetest

import (
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/permission"
)

// permissionKept: the permission record stored with a call's result
// (history.Part.Permission) comes back whole — from another opening,
// its message's checksum verified on the read — whether the result was
// appended or kept as its call finished.
func permissionKept(t *testing.T, s Subject) {
	e := s.env(t)
	e.conversation("c")
	want := SampleMessages()
	at := time.Date(2026, 12, 5, 11, 0, 0, 0, time.UTC)
	want[2].Parts[0].Permission = &permission.Record{Decision: "deny", By: "person", Answer: "deny", Reason: "not \"now\" <please>", At: at}
	if err := e.s.Append(e.ctx, "c", want[:2]...); err != nil {
		t.Fatal(err)
	}
	kept := history.Part{Type: history.ToolResultPart, CallID: "toolu_1", Text: "kept", Permission: &permission.Record{Decision: "allow", By: "rule", Rule: "allow go test * (--allow)", At: at}}
	if err := e.s.Keep(e.ctx, "c", kept); err != nil {
		t.Fatal(err)
	}
	got, err := e.open().Kept(e.ctx, "c")
	if err != nil || len(got) != 1 || got[0].Permission == nil || *got[0].Permission != *kept.Permission {
		t.Fatalf("the kept result comes back as %+v (%v), want its record %+v", got, err, kept.Permission)
	}
	if err := e.s.Append(e.ctx, "c", want[2]); err != nil {
		t.Fatal(err)
	}
	msgs, err := e.open().Messages(e.ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	sameMessages(t, msgs, want)
	if p := msgs[2].Parts[0].Permission; p == nil || *p != *want[2].Parts[0].Permission {
		t.Fatalf("the record comes back as %+v, want %+v", p, want[2].Parts[0].Permission)
	}
}
