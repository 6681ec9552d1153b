package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/history"
)

// ConversationPage is what a read of myelin://conversations/{id}{?from}
// gives, as application/json: the conversation's record and a page of
// its messages, each exactly as the store holds it (history.Message's
// JSON: tool results as the model read them, spill paths, permission
// records, usage), from message From (0-based) on. A page holds whole
// messages only, as many as fit in the round bound's characters (4 × the
// inline cap by default), and at least one; Next is the URI of the next
// page, empty at the end.
type ConversationPage struct {
	Conversation history.Conversation `json:"conversation"`
	From         int                  `json:"from"`
	Total        int                  `json:"total"`
	Messages     []json.RawMessage    `json:"messages"`
	Next         string               `json:"next,omitempty"`
}

// readConversation reads a page of a stored conversation.
func (s *Server) readConversation(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	st := s.cfg.Store
	if st == nil {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	id, from, err := parseConvURI(uri)
	if err != nil {
		return nil, err
	}
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
	if from > len(msgs) {
		return nil, refused("%s: from %d is past the conversation's %d messages", uri, from, len(msgs))
	}
	page := ConversationPage{Conversation: c, From: from, Total: len(msgs), Messages: []json.RawMessage{}}
	bound := s.cfg.Env.Limits.RoundBound()
	used := 0
	i := from
	for ; i < len(msgs); i++ {
		b, err := json.Marshal(msgs[i])
		if err != nil {
			return nil, fmt.Errorf("encoding message %d of conversation %s: %w", i, id, err)
		}
		n := utf8.RuneCount(b)
		if len(page.Messages) > 0 && used+n > bound {
			break
		}
		page.Messages = append(page.Messages, b)
		used += n
	}
	if i < len(msgs) {
		page.Next = convURI(id, i)
	}
	out, err := json.Marshal(page)
	if err != nil {
		return nil, fmt.Errorf("encoding conversation %s: %w", id, err)
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(out)}}}, nil
}

// convURI is the URI of conversation id's page from message from.
func convURI(id string, from int) string {
	u := convScheme + url.PathEscape(id)
	if from > 0 {
		u += "?from=" + strconv.Itoa(from)
	}
	return u
}

// parseConvURI is the conversation id and first message of uri.
func parseConvURI(uri string) (id string, from int, err error) {
	rest, ok := strings.CutPrefix(uri, convScheme)
	if !ok {
		return "", 0, refused("%q is not a myelin://conversations/{id} URI", uri)
	}
	rest, query, _ := strings.Cut(rest, "?")
	if id, err = url.PathUnescape(rest); err != nil || id == "" || strings.Contains(id, "/") {
		return "", 0, refused("%q does not name a conversation: myelin://conversations/{id}", uri)
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return "", 0, refused("%s: the query %q: %v", uri, query, err)
	}
	if f := q.Get("from"); f != "" {
		if from, err = strconv.Atoi(f); err != nil || from < 0 {
			return "", 0, refused("%s: from must be a message number, 0 or more, got %q", uri, f)
		}
	}
	return id, from, nil
}
