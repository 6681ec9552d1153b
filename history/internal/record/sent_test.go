package record

import (
	"fmt"
	"testing"
)

func TestSentBodiesGiveABodyOnlyForItsNumberAndMeta(t *testing.T) {
	var c SentBodies
	body := []byte("the body")
	c.Remember("c", 3, `{"row":1}`, body)
	body[0] = 'X' // a copy is kept
	for _, tc := range []struct {
		name string
		n    int
		meta string
		ok   bool
	}{
		{"its number and meta", 3, `{"row":1}`, true},
		{"another number", 2, `{"row":1}`, false},
		{"another row's meta under its number", 3, `{"row":2}`, false},
		{"a row with no nonce", 3, `{}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := c.Last("c", tc.n, tc.meta)
			if ok != tc.ok || ok && string(got) != "the body" {
				t.Fatalf("Last: %q, %v; want ok %v and the body as remembered", got, ok, tc.ok)
			}
		})
	}
	if _, ok := c.Last("other", 3, `{"row":1}`); ok {
		t.Fatal("a conversation never remembered gave a body")
	}
	c.Forget("c")
	if _, ok := c.Last("c", 3, `{"row":1}`); ok {
		t.Fatal("a forgotten conversation gave a body")
	}
}

func TestSentBodiesRememberAtMostTheirBound(t *testing.T) {
	var c SentBodies
	for i := range 3 * SentBodiesKept {
		c.Remember(fmt.Sprint("c", i), 1, "m", []byte("b"))
		if c.Len() > SentBodiesKept {
			t.Fatalf("%d bodies remembered after %d conversations; the bound is %d", c.Len(), i+1, SentBodiesKept)
		}
	}
	last := fmt.Sprint("c", 3*SentBodiesKept-1)
	if _, ok := c.Last(last, 1, "m"); !ok {
		t.Fatal("the body remembered last was forgotten")
	}
	c.Remember(last, 2, "m2", []byte("b2")) // one already there: nothing else forgotten
	if c.Len() != SentBodiesKept {
		t.Fatalf("%d remembered after replacing one; want %d", c.Len(), SentBodiesKept)
	}
}
