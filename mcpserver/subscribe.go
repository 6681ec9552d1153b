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

	"github.com/myelin-run/myelin/history"
)

// Subscriptions (resources/subscribe, resources/unsubscribe) are taken
// for myelin's own resources: a file:// URI of a path in the workspace
// (there or not yet: its appearing is a change), and a
// myelin://conversations/{id} URI of a conversation in the store; and,
// with Config.Fixtures, for any other URI (the conformance fixtures').
// A URI longer than MaxSubscribedURI, a file:// URI with a query or a
// fragment, one outside the workspace or of a path the permission
// policy does not let be read without asking (policy.go), and one of a
// conversation the store does not have are refused, saying why; so is a
// session's
// subscription past MaxSubscriptions. The SDK keeps which session
// subscribed to what and sends notifications/resources/updated to them
// (Server.ResourceUpdated). myelin's own are watched by polling, every
// Config.Poll, while someone subscribes to them: a workspace file
// changes when its size or modification time does (or it appears or
// goes away), a conversation when its message count or last update
// does. A poll looks only at the subscribed URIs, and at each file or
// conversation once however many URIs name it (a conversation's pages
// do); polling stops when none is left.

// MaxSubscriptions is how many resources one session may subscribe to
// at once; a subscription past it is refused, naming the bound.
const MaxSubscriptions = 1000

// MaxSubscribedURI is the longest URI, in bytes, a session may subscribe
// to (every update of it carries it whole).
const MaxSubscribedURI = 8 << 10

// subscriptions is what hosts subscribed to.
type subscriptions struct {
	mu      sync.Mutex
	by      map[string]map[*sdk.ServerSession]bool // URI → its subscribers
	stamps  map[string]string                      // URI → how it looked at the last poll
	per     map[*sdk.ServerSession]int             // session → how many URIs it subscribes to
	sending map[string]bool                        // URI → its update is being sent; true: changed again since
	polling bool
}

// subscribe takes a session's subscription to a URI, or refuses it (see
// above).
func (s *Server) subscribe(ctx context.Context, req *sdk.SubscribeRequest) error {
	uri := req.Params.URI
	if err := s.subscribable(ctx, req.Session, uri); err != nil {
		return err
	}
	stamp := s.stamp(ctx, uri)
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	if s.subs.by == nil {
		s.subs.by, s.subs.stamps, s.subs.per = map[string]map[*sdk.ServerSession]bool{}, map[string]string{}, map[*sdk.ServerSession]int{}
	}
	if s.subs.by[uri][req.Session] {
		return nil
	}
	if s.subs.per[req.Session] >= MaxSubscriptions {
		return refused("this session subscribes to %d resources, the most one session may (MaxSubscriptions): unsubscribe from one first", MaxSubscriptions)
	}
	if s.subs.by[uri] == nil {
		s.subs.by[uri] = map[*sdk.ServerSession]bool{}
		s.subs.stamps[uri] = stamp
	}
	s.subs.by[uri][req.Session] = true
	s.subs.per[req.Session]++
	if !s.subs.polling && watched(uri) {
		s.subs.polling = true
		go s.poll()
	}
	return nil
}

// subscribable is nil when uri names a resource a session may subscribe
// to, and otherwise the error that says why not.
func (s *Server) subscribable(ctx context.Context, ss *sdk.ServerSession, uri string) error {
	if len(uri) > MaxSubscribedURI {
		return refused("the URI %.80s… is %d bytes long, more than the %d a subscription may name", uri, len(uri), MaxSubscribedURI)
	}
	switch {
	case strings.HasPrefix(uri, convScheme):
		if s.cfg.Store == nil {
			return refused("%s: this server offers no conversations", uri)
		}
		id, _, _, err := parseConvURI(uri)
		if err != nil {
			return err
		}
		if _, err := s.cfg.Store.Get(ctx, id); errors.Is(err, history.ErrNotFound) {
			return refused("%s: no conversation %q to subscribe to", uri, id)
		} else if err != nil {
			return fmt.Errorf("looking up conversation %q for a subscription to %s: %w", id, uri, err)
		}
		return nil
	case strings.HasPrefix(uri, "file:"):
		if s.cfg.Workspace == nil {
			return refused("%s: this server offers no workspace files", uri)
		}
		if strings.ContainsAny(uri, "?#") {
			return refused("%s: a file:// URI to subscribe to has no query or fragment", uri)
		}
		rel, err := workspacePath(s.cfg.Workspace.Dir(), uri)
		if err != nil {
			return err
		}
		if err := s.maySubscribe(ctx, ss, rel); err != nil {
			return err
		}
		return s.mayReachTarget(ctx, ss, rel, true)
	case s.cfg.Fixtures:
		return nil
	}
	return refused("%s names no resource of this server's: only file:// URIs of the workspace and myelin://conversations/{id} are subscribed to", uri)
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
	if !s.by[uri][ss] {
		return
	}
	delete(s.by[uri], ss)
	if s.per[ss]--; s.per[ss] <= 0 {
		delete(s.per, ss)
	}
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
		seen := map[string]string{} // this poll's stamps, by what they stamp
		for _, uri := range uris {
			key := s.stampKey(uri)
			now, ok := seen[key]
			if !ok {
				now = s.stamp(ctx, uri)
				seen[key] = now
			}
			s.subs.mu.Lock()
			old, ok := s.subs.stamps[uri]
			if ok {
				s.subs.stamps[uri] = now
			}
			s.subs.mu.Unlock()
			if ok && old != now {
				s.updated(uri)
			}
		}
	}
}

// updated tells uri's subscribers it changed, on a goroutine of the
// URI's own: the SDK writes the update to each subscriber in turn, and a
// host slow to read its stream (until Config.WriteStall cuts it) holds
// only the updates of the URIs it subscribes to, not the poll. A change
// seen while the URI's update is being sent is sent once after it: a
// change is a flag, not a queue.
func (s *Server) updated(uri string) {
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	if s.subs.sending == nil {
		s.subs.sending = map[string]bool{}
	}
	if _, busy := s.subs.sending[uri]; busy {
		s.subs.sending[uri] = true
		return
	}
	s.subs.sending[uri] = false
	go func() {
		for {
			_ = s.sdk.ResourceUpdated(context.Background(), &sdk.ResourceUpdatedNotificationParams{URI: uri})
			s.subs.mu.Lock()
			if !s.subs.sending[uri] {
				delete(s.subs.sending, uri)
				s.subs.mu.Unlock()
				return
			}
			s.subs.sending[uri] = false
			s.subs.mu.Unlock()
		}
	}()
}

// stampKey is what uri's stamp is of: its conversation, whatever page
// of it the URI names; its workspace file, however the URI spells it;
// the URI itself otherwise.
func (s *Server) stampKey(uri string) string {
	switch {
	case strings.HasPrefix(uri, convScheme):
		if id, _, _, err := parseConvURI(uri); err == nil {
			return "conversation " + id
		}
	case strings.HasPrefix(uri, "file:") && s.cfg.Workspace != nil:
		if rel, err := workspacePath(s.cfg.Workspace.Dir(), uri); err == nil {
			return "file " + rel
		}
	}
	return uri
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
		if s.linkHidden(ctx, rel) {
			return "hidden" // it came to lead through a link to a file the policy hides (policy.go)
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
		if st.IsDir() && !s.mayListDir(ctx, rel) {
			return "directory" // its entries' coming and going is a listing's (policy.go)
		}
		return fmt.Sprintf("%d %d %v", st.Size(), st.ModTime().UnixNano(), st.Mode())
	}
	return ""
}
