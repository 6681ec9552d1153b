package record

import (
	"strings"
	"testing"
)

// RequestRows rebuilds a body from a whole one and the tails after it,
// and refuses rows that do not follow one another or stop short of the
// request asked for, saying which.
func TestRequestRowsRebuildTheBodyAndRefuseRowsThatDoNotFollow(t *testing.T) {
	r := NewRequestRows(2, 4)
	for _, row := range []struct {
		rn, base, prefix int
		tail, meta       string
	}{{2, 0, 0, "abcdef", "m2"}, {3, 2, 4, "XY", "m3"}, {4, 3, 5, "Z", "m4"}} {
		if err := r.Add(row.rn, row.base, row.prefix, []byte(row.tail), row.meta); err != nil {
			t.Fatalf("row %d: %v", row.rn, err)
		}
	}
	body, meta, err := r.Done()
	if err != nil || string(body) != "abcdXZ" || meta != "m4" {
		t.Fatalf("request 4 rebuilt as %q, meta %q (%v); want \"abcdXZ\", \"m4\"", body, meta, err)
	}
	for _, tc := range []struct {
		name             string
		rn, base, prefix int
		want             string
	}{
		{"a row skipped", 4, 3, 0, "request 4's row does not follow"},
		{"a base that is not the row before", 3, 1, 0, "request 3's row does not follow"},
		{"a prefix longer than the body before", 3, 2, 7, "request 3's row does not follow"},
	} {
		r := NewRequestRows(2, 3)
		if err := r.Add(2, 0, 0, []byte("abcdef"), ""); err != nil {
			t.Fatal(err)
		}
		if err := r.Add(tc.rn, tc.base, tc.prefix, []byte("x"), ""); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error saying %q", tc.name, err, tc.want)
		}
	}
	r = NewRequestRows(1, 3)
	if err := r.Add(1, 0, 0, []byte("a"), ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Done(); err == nil || err.Error() != "rows 2 to 3 are missing" {
		t.Fatalf("rows stopping at 1 of 3: %v; want \"rows 2 to 3 are missing\"", err)
	}
}
