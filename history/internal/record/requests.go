package record

import "fmt"

// RequestRows rebuilds request n's body from its stored rows, from the
// last whole body at or before n (row from) to n, given in order: a whole
// body (base 0), then each later request's tail after the prefix it
// shares with the one before it (base n-1). The stores read the rows each
// their own way and give them to Add, so that they rebuild and refuse
// alike; the errors say what is wrong with the rows, and the store wraps
// them as damage with its name.
type RequestRows struct {
	n, next int
	body    []byte
	meta    string
}

// NewRequestRows is the rebuilding of request n from row from.
func NewRequestRows(from, n int) *RequestRows { return &RequestRows{n: n, next: from} }

// Add takes row rn: its base (0 for a whole body), the length of the
// prefix it shares with the body before it, its tail and its meta (kept
// for row n). A row that does not follow the one before it is an error.
func (r *RequestRows) Add(rn, base, prefix int, tail []byte, meta string) error {
	if rn != r.next || (base != 0 && (base != rn-1 || prefix > len(r.body))) {
		return fmt.Errorf("request %d's row does not follow the one before it", rn)
	}
	r.next++
	if base == 0 {
		prefix = 0
	}
	r.body = append(r.body[:prefix], tail...)
	if rn == r.n {
		r.meta = meta
	}
	return nil
}

// Done returns request n's body and meta, or an error saying which rows
// were missing.
func (r *RequestRows) Done() (body []byte, meta string, err error) {
	if r.next != r.n+1 {
		return nil, "", fmt.Errorf("rows %d to %d are missing", r.next, r.n)
	}
	return r.body, r.meta, nil
}
