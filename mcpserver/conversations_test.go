package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/result"
)

// A message too long for a page by itself (a 2,000,000-character user
// message against the 96,000-character round bound) is given in pieces
// of its JSON, each page within the bound, next naming the page with
// the next piece; the pieces put together are the message as stored,
// and the messages around it are read whole.
func TestAMessageOverTheRoundBoundIsReadInPiecesEachPageWithinTheBound(t *testing.T) {
	st := &history.Memory{}
	ctx := context.Background()
	if err := st.Create(ctx, history.Conversation{ID: "big", System: "be brief"}); err != nil {
		t.Fatal(err)
	}
	// quotes, line ends and <> are escaped inside a piece: they make its
	// JSON longer than its characters
	long := strings.Repeat("abcdefghijklmnopé\"\n<", 2_000_000/20)
	for _, text := range []string{"before", long, "after"} {
		if err := st.Append(ctx, "big", history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: text}}}); err != nil {
			t.Fatal(err)
		}
	}
	stored, _ := st.Messages(ctx, "big")
	limits := result.Limits{}
	bound := limits.RoundBound()
	s := New(Config{Store: st, Env: result.Env{Limits: limits}})
	cs := connectAt(t, s, nil, hostVersion)
	var got []json.RawMessage
	var pieces strings.Builder // the message being put together
	have := 0                  // its characters so far
	pages := 0
	for uri := "myelin://conversations/big"; uri != ""; pages++ {
		if pages > 200 {
			t.Fatal("the pages do not end")
		}
		text := readText(t, cs, uri)
		if n := utf8.RuneCountInString(text); n > bound {
			t.Fatalf("%s is %d characters, over the round bound %d", uri, n, bound)
		}
		var page struct {
			Messages []json.RawMessage `json:"messages"`
			Piece    *struct {
				Message, Offset, Length int
				JSON                    string
			} `json:"piece"`
			Next string `json:"next"`
		}
		if err := json.Unmarshal([]byte(text), &page); err != nil {
			t.Fatalf("%s is not a page: %v", uri, err)
		}
		if p := page.Piece; p != nil {
			if len(page.Messages) != 0 || p.Message != len(got) || p.Offset != have {
				t.Fatalf("%s gives a piece of message %d from %d beside %d messages, want message %d from %d alone", uri, p.Message, p.Offset, len(page.Messages), len(got), have)
			}
			pieces.WriteString(p.JSON)
			have += utf8.RuneCountInString(p.JSON)
			if have == p.Length {
				got = append(got, json.RawMessage(pieces.String()))
				pieces.Reset()
				have = 0
			}
		}
		got = append(got, page.Messages...)
		uri = page.Next
	}
	if pieces.Len() > 0 {
		t.Errorf("the pages end within a message, %d characters of it read", pieces.Len())
	}
	want, _ := json.Marshal(stored)
	all, _ := json.Marshal(got)
	if !bytes.Equal(all, want) {
		t.Errorf("the pages hold %d messages (%d bytes), want the %d as stored (%d bytes)", len(got), len(all), len(stored), len(want))
	}
	if pages < 2_000_000/bound {
		t.Errorf("the conversation was read in %d pages, too few to be within the bound", pages)
	}
}
