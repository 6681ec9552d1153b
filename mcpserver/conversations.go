package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/history"
)

// ConversationPage is what a read of myelin://conversations/{id}{?from,offset}
// gives, as application/json: the conversation's record and a page of
// its messages, each exactly as the store holds it (history.Message's
// JSON: tool results as the model read them, spill paths, permission
// records, usage), from message From (0-based) on. A page is at most
// the round bound's characters (4 × the inline cap by default), the
// record included, and holds whole messages, as many as fit. A message
// too long for a page by itself is given in pieces instead, a page
// each: Piece holds a piece of its JSON and Messages none, and the
// pieces put together, in order, are the message's JSON whole. Next is
// the URI of the next page (the next piece's, or the next message's),
// empty at the end.
type ConversationPage struct {
	Conversation history.Conversation `json:"conversation"`
	From         int                  `json:"from"`
	Total        int                  `json:"total"`
	Messages     []json.RawMessage    `json:"messages"`
	Piece        *MessagePiece        `json:"piece,omitempty"`
	Next         string               `json:"next,omitempty"`
}

// MessagePiece is a piece of a message whose JSON is longer than a
// page: the characters of its JSON from Offset (0-based), as a string.
// It is the last piece when Offset plus JSON's characters is Length.
type MessagePiece struct {
	// Message is the message's number in the conversation (From).
	Message int `json:"message"`
	// Offset is where the piece starts in the message's JSON, in
	// characters.
	Offset int `json:"offset"`
	// Length is the characters of the message's whole JSON.
	Length int `json:"length"`
	// JSON is the piece: characters of the message's JSON, as text.
	JSON string `json:"json"`
}

// readConversation reads a page of a stored conversation.
func (s *Server) readConversation(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	st := s.cfg.Store
	if st == nil {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	id, from, offset, err := parseConvURI(uri)
	if err != nil {
		return nil, err
	}
	done, err := s.readTurn(ctx, req)
	if err != nil {
		return nil, err
	}
	defer done()
	c, err := st.Get(ctx, id)
	if errors.Is(err, history.ErrNotFound) {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, fmt.Errorf("reading conversation %s: %w", id, err)
	}
	msgs, err := st.Messages(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("reading the messages of conversation %s: %w", id, err)
	}
	if from > len(msgs) || from == len(msgs) && offset > 0 {
		return nil, refused("%s: from %d is past the conversation's %d messages", uri, from, len(msgs))
	}
	page := ConversationPage{Conversation: c, From: from, Total: len(msgs), Messages: []json.RawMessage{}}
	budget := pageBudget(page, s.cfg.Env.Limits.RoundBound())
	used := 0
	i := from
	for ; i < len(msgs); i++ {
		b, err := json.Marshal(msgs[i])
		if err != nil {
			return nil, fmt.Errorf("encoding message %d of conversation %s: %w", i, id, err)
		}
		n := utf8.RuneCount(b) + 1 // and its comma
		if len(page.Messages) == 0 && (n > budget || offset > 0) {
			p, err := pieceOf(string(b), offset, budget)
			if err != nil {
				return nil, refused("%s: %v", uri, err)
			}
			p.Message = i
			page.Piece = &p
			if end := p.Offset + utf8.RuneCountInString(p.JSON); end < p.Length {
				page.Next = pieceURI(id, i, end)
				return conversationResult(uri, id, page)
			}
			i++
			break
		}
		if used+n > budget {
			break
		}
		page.Messages = append(page.Messages, b)
		used += n
	}
	if i < len(msgs) {
		page.Next = convURI(id, i)
	}
	return conversationResult(uri, id, page)
}

// conversationResult is page as what a read of uri gives.
func conversationResult(uri, id string, page ConversationPage) (*sdk.ReadResourceResult, error) {
	out, err := json.Marshal(page)
	if err != nil {
		return nil, fmt.Errorf("encoding conversation %s: %w", id, err)
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(out)}}}, nil
}

// pageBudget is how many characters of bound are left for a page's
// messages, or its piece's JSON, once the rest of the page (the record,
// the longest next URI, a piece's fields) is counted. A record nearly as
// long as the bound (a system prompt of many pages) still leaves half of
// it, so that every page reads on; such a page is over the bound by its
// record's length.
func pageBudget(page ConversationPage, bound int) int {
	page.Piece = &MessagePiece{Message: math.MaxInt, Offset: math.MaxInt, Length: math.MaxInt}
	page.Next = pieceURI(page.Conversation.ID, math.MaxInt, math.MaxInt)
	b, _ := json.Marshal(page)
	return max(bound-utf8.RuneCount(b), bound/2)
}

// pieceOf is the piece of a message's JSON js from the character offset
// on whose JSON string (quotes and escapes included, as encoding/json
// writes it) is at most budget characters long.
func pieceOf(js string, offset, budget int) (MessagePiece, error) {
	length := utf8.RuneCountInString(js)
	if offset >= length {
		return MessagePiece{}, fmt.Errorf("offset %d is past the message's %d characters of JSON", offset, length)
	}
	i := 0
	for range offset {
		_, w := utf8.DecodeRuneInString(js[i:])
		i += w
	}
	start, used := i, 2 // the quotes
	for i < len(js) {
		r, w := utf8.DecodeRuneInString(js[i:])
		n := escapedLen(r)
		if used+n > budget {
			break
		}
		used += n
		i += w
	}
	return MessagePiece{Offset: offset, Length: length, JSON: js[start:i]}, nil
}

// escapedLen is how many characters encoding/json writes for r within a
// string: an escape for a quote, a backslash and the control characters,
// \u00XX for <, > and & (it escapes HTML), \u2028 and \u2029 too.
func escapedLen(r rune) int {
	switch {
	case r == '"' || r == '\\' || r == '\b' || r == '\f' || r == '\n' || r == '\r' || r == '\t':
		return 2
	case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029' || r == utf8.RuneError:
		return 6
	}
	return 1
}

// convURI is the URI of conversation id's page from message from.
func convURI(id string, from int) string {
	u := convScheme + url.PathEscape(id)
	if from > 0 {
		u += "?from=" + strconv.Itoa(from)
	}
	return u
}

// pieceURI is the URI of the page of conversation id that gives message
// from's JSON from the character offset on.
func pieceURI(id string, from, offset int) string {
	return convScheme + url.PathEscape(id) + "?from=" + strconv.Itoa(from) + "&offset=" + strconv.Itoa(offset)
}

// parseConvURI is the conversation id, first message, and the offset in
// that message's JSON, of uri.
func parseConvURI(uri string) (id string, from, offset int, err error) {
	rest, ok := strings.CutPrefix(uri, convScheme)
	if !ok {
		return "", 0, 0, refused("%q is not a myelin://conversations/{id} URI", uri)
	}
	rest, query, _ := strings.Cut(rest, "?")
	if id, err = url.PathUnescape(rest); err != nil || id == "" || strings.Contains(id, "/") {
		return "", 0, 0, refused("%q does not name a conversation: myelin://conversations/{id}", uri)
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return "", 0, 0, refused("%s: the query %q: %v", uri, query, err)
	}
	if f := q.Get("from"); f != "" {
		if from, err = strconv.Atoi(f); err != nil || from < 0 {
			return "", 0, 0, refused("%s: from must be a message number, 0 or more, got %q", uri, f)
		}
	}
	if o := q.Get("offset"); o != "" {
		if offset, err = strconv.Atoi(o); err != nil || offset < 0 {
			return "", 0, 0, refused("%s: offset must be a character of message %d's JSON, 0 or more, got %q", uri, from, o)
		}
	}
	return id, from, offset, nil
}
