package sqlite

import (
	"context"
	"errors"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// A fork kept by r whose base is deleted behind the store's back is
// reported damaged at r's next read, as by a store opened afresh.
func TestAKeptForkWhoseBaseWentIsReadAsDamaged(t *testing.T) {
	path, _, r := forkKept(t, nil)
	damage(t, path, `DELETE FROM messages WHERE conversation = 'c'; DELETE FROM conversations WHERE id = 'c'`)
	_, ferr := openStore(t, path).Messages(context.Background(), "f")
	_, err := r.Messages(context.Background(), "f")
	if !errors.Is(ferr, history.ErrDamaged) || !errors.Is(err, history.ErrDamaged) {
		t.Fatalf("r: %v; fresh: %v; want both damaged", err, ferr)
	}
}
