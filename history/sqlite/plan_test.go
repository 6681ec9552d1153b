package sqlite

import (
	"path/filepath"
	"strings"
	"testing"
)

// The read of a conversation's rows with its readTag — every read after
// the first, and the read whole after a restart — finds the tag's
// checksum once per read, not once per row: its query plan holds no
// correlated subquery (one naming the outer row's c.id was searched for
// again at every message, which doubled the cost of stepping 100,000
// rows).
func TestTheTaggedReadFindsItsTagOncePerReadNotPerRow(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "h.db"))
	rows, err := s.db.Query(`EXPLAIN QUERY PLAN `+selectNewTagged, 0, 0, "c")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	whole := strings.Join(plan, "\n")
	if strings.Contains(whole, "CORRELATED") || !strings.Contains(whole, "SCALAR SUBQUERY") {
		t.Fatalf("the tagged read's plan should find the tag's checksum in a subquery run once (no CORRELATED one):\n%s", whole)
	}
	// the conversation's row and its message rows are merged in the
	// order each comes in, never sorted (a sort of 100,000 rows before
	// the first one is handed on)
	if strings.Contains(whole, "TEMP B-TREE") || !strings.Contains(whole, "MERGE") {
		t.Fatalf("the tagged read's plan should merge its two parts in order, without sorting:\n%s", whole)
	}
}
