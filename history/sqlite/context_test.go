package sqlite

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/storetest"
)

func TestContextRecordsComeBackAsStoredAfterAReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	s := openStore(t, path)
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c1", System: "be brief"}); err != nil {
		t.Fatal(err)
	}
	want := append(storetest.SampleMessages(),
		history.Message{Role: history.Context, Settings: &history.Settings{Model: "m", System: "ab12", Tools: "cd34", Cache: "marks"}},
		history.Message{Role: history.Context, Edit: &history.Edit{
			Cleared: []history.Cleared{
				{CallID: "toolu_1", Text: "[myelin: cleared \"x\"]\n", Path: ".myelin/tool-results/x.txt", Chars: 4000, Images: 1},
				{CallID: "toolu_1", Input: true, Text: `{"myelin_cleared":"…"}`, Chars: 9000},
			},
			Summary: &history.Summary{Through: 2, Text: "so far: <a.txt> & more", Usage: &history.Usage{Input: 3, Output: 4}},
			Why:     "over the high mark", Before: 30000, After: 12000,
		}})
	if err := s.Append(ctx, "c1", want...); err != nil {
		t.Fatal(err)
	}
	s.Close()
	got, err := openStore(t, path).Messages(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i].Time = want[i].Time
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got[3:], want[3:])
	}
	if !got[4].IsRecord() || got[2].IsRecord() {
		t.Fatalf("IsRecord: record %v, message %v", got[4].IsRecord(), got[2].IsRecord())
	}
}
