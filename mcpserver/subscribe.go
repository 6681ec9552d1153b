package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Subscriptions (resources/subscribe, resources/unsubscribe) are taken
// for any URI: the SDK keeps which session subscribed to what and sends
// notifications/resources/updated to them (Server.ResourceUpdated), so
// that other resources on the server (the conformance fixtures') are
// subscribed to the same way. myelin's own are watched by polling, every
// Config.Poll, while someone subscribes to them: a workspace file
// changes when its size or modification time does (or it appears or goes
// away), a conversation when its message count or last update does. A
// poll looks only at the subscribed URIs, and polling stops when none is
// left.

// subscriptions is what hosts subscribed to.
type subscriptions struct {
	mu      sync.Mutex
	by      map[string]map[*sdk.ServerSession]bool // URI → its subscribers
	stamps  map[string]string                      // URI → how it looked at the last poll
	polling bool
}

// subscribe takes a session's subscription to a URI.
func (s *Server) subscribe(ctx context.Context, req *sdk.SubscribeRequest) error {
	uri := req.Params.URI
	stamp := s.stamp(ctx, uri)
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	if s.subs.by == nil {
		s.subs.by, s.subs.stamps = map[string]map[*sdk.ServerSession]bool{}, map[string]string{}
	}
	if s.subs.by[uri] == nil {
		s.subs.by[uri] = map[*sdk.ServerSession]bool{}
		s.subs.stamps[uri] = stamp
	}
	s.subs.by[uri][req.Session] = true
	if !s.subs.polling && watched(uri) {
		s.subs.polling = true
		go s.poll()
	}
	return nil
}

// unsubscribe ends a session's subscription to a URI.
func (s *Server) unsubscribe(ctx context.Context, req *sdk.UnsubscribeRequest) error {
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	s.subs.drop(req.Params.URI, req.Session)
	return nil
}

// drop removes ss's subscription to uri; s.mu is held.
func (s *subscriptions) drop(uri string, ss *sdk.ServerSession) {
	delete(s.by[uri], ss)
	if len(s.by[uri]) == 0 {
		delete(s.by, uri)
		delete(s.stamps, uri)
	}
}

// watched reports whether uri is one of myelin's own resources, which
// poll watches.
func watched(uri string) bool {
	return strings.HasPrefix(uri, "file:") || strings.HasPrefix(uri, convScheme)
}

// poll looks at the subscribed resources every Config.Poll, and tells
// their subscribers of each that changed. It returns when no session
// subscribes to one of myelin's own resources any more (a session that
// closed no longer does).
func (s *Server) poll() {
	t := time.NewTicker(s.cfg.Poll)
	defer t.Stop()
	for range t.C {
		uris := s.watchedURIs()
		if uris == nil {
			return
		}
		ctx := context.Background()
		for _, uri := range uris {
			now := s.stamp(ctx, uri)
			s.subs.mu.Lock()
			old, ok := s.subs.stamps[uri]
			if ok {
				s.subs.stamps[uri] = now
			}
			s.subs.mu.Unlock()
			if ok && old != now {
				_ = s.sdk.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: uri})
			}
		}
	}
}

// watchedURIs are the URIs of myelin's own resources some live session
// subscribes to, after dropping the sessions that closed; nil when there
// are none, and then polling stops.
func (s *Server) watchedURIs() []string {
	live := map[*sdk.ServerSession]bool{}
	for ss := range s.sdk.Sessions() {
		live[ss] = true
	}
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	var uris []string
	for uri, sessions := range s.subs.by {
		for ss := range sessions {
			if !live[ss] {
				s.subs.drop(uri, ss)
			}
		}
		if s.subs.by[uri] != nil && watched(uri) {
			uris = append(uris, uri)
		}
	}
	if uris == nil {
		s.subs.polling = false
	}
	return uris
}

// stamp is how the resource at uri looks now, as far as a change goes:
// two stamps differ when it changed. A resource that is not myelin's own
// has the empty stamp, which never changes.
func (s *Server) stamp(ctx context.Context, uri string) string {
	switch {
	case strings.HasPrefix(uri, convScheme):
		if s.cfg.Store == nil {
			return ""
		}
		id, _, _, err := parseConvURI(uri)
		if err != nil {
			return ""
		}
		c, err := s.cfg.Store.Get(ctx, id)
		if err != nil {
			return "error: " + err.Error()
		}
		return fmt.Sprintf("%d %d", c.Messages, c.Updated.UnixNano())
	case strings.HasPrefix(uri, "file:"):
		ws := s.cfg.Workspace
		if ws == nil {
			return ""
		}
		rel, err := workspacePath(ws.Dir(), uri)
		if err != nil {
			return ""
		}
		root, err := os.OpenRoot(ws.Dir())
		if err != nil {
			return "error: " + err.Error()
		}
		defer root.Close()
		st, err := root.Stat(rel)
		if errors.Is(err, fs.ErrNotExist) {
			return "absent"
		}
		if err != nil {
			return "error: " + err.Error()
		}
		return fmt.Sprintf("%d %d %v", st.Size(), st.ModTime().UnixNano(), st.Mode())
	}
	return ""
}
