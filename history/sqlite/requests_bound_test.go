package sqlite

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
)

// The SQLite store remembers the newest request body of a bounded number
// of conversations (to keep the next by what it adds without reading the
// last back): a server that runs many conversations must not hold the last
// body of each of them for as long as it runs. The ones it forgot are read
// back, and every body is still given back whole.
func TestTheSQLiteStoreRemembersTheLastBodyOfABoundedNumberOfConversations(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const convs = record.SentBodiesKept * 3
	body := func(c, i int) []byte {
		return []byte(fmt.Sprintf(`{"c":%d,"m":[%s]}`, c, bytes.Repeat([]byte(`"x",`), i+1)))
	}
	for i := range 3 {
		for c := range convs {
			id := fmt.Sprint("c", c)
			if i == 0 {
				if err := s.Create(ctx, history.Conversation{ID: id}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.AddRequest(ctx, id, history.SentRequest{Body: body(c, i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := s.sent.Len(); n > record.SentBodiesKept {
		t.Fatalf("the store remembers the last body of %d conversations; want at most %d", n, record.SentBodiesKept)
	}
	for c := range convs {
		for i := range 3 {
			got, err := s.Request(ctx, fmt.Sprint("c", c), i+1)
			if err != nil || !bytes.Equal(got.Body, body(c, i)) {
				t.Fatalf("conversation %d request %d: %v %q", c, i+1, err, got.Body)
			}
		}
	}
}
