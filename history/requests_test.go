package history

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// requestBodies are a conversation's request bodies as a wire sends them:
// each the one before with more appended and its last bytes changed (a
// moving cache marker), and now and then one that differs from its first
// byte (the settings changed).
func requestBodies(n int) [][]byte {
	var out [][]byte
	body := []byte(`{"messages":[`)
	for i := range n {
		body = append(body[:max(len(body)-20, 13)], fmt.Sprintf(`{"role":"user","content":"round %d"},`, i)...)
		b := append([]byte(nil), body...)
		b = append(b, fmt.Sprintf(`],"marker":%d}`, i)...)
		if i%17 == 16 {
			b[0] = '[' // differs from the first byte
		}
		out = append(out, b)
	}
	return out
}

// The store keeps what a request adds, not the whole of it: a
// conversation's requests cost about what the conversation does.
func TestTheSQLiteStoreKeepsARequestByWhatItAdds(t *testing.T) {
	ctx := context.Background()
	s, err := OpenSQLite(filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(ctx, Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, b := range requestBodies(200) {
		total += len(b)
		if _, err := s.AddRequest(ctx, "c", SentRequest{Body: b}); err != nil {
			t.Fatal(err)
		}
	}
	var kept int
	if err := s.db.QueryRow(`SELECT SUM(LENGTH(tail)) FROM requests`).Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if kept*5 > total {
		t.Fatalf("kept %d bytes of tails for %d bytes of bodies", kept, total)
	}
}
