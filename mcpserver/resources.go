package mcpserver

import (
	"context"
	"fmt"
	"mime"
	"net/url"
	"path"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// What a host may read (resources/list, resources/read, the templates):
//
//   - the workspace's spill files and saved payloads (the regular files
//     directly under .myelin/tool-results), listed, as file:// URIs, those
//     the permission policy lets be read without asking (policy.go);
//   - any file of the workspace, read by its file:// URI (the template
//     file://<root>/{+path}), confined to the workspace as its tools are
//     (files.go);
//   - the store's conversations, listed, as myelin://conversations/{id},
//     read as JSON a page of messages at a time (conversations.go).
//
// The list is the SDK's: each listed resource is added to the SDK's
// server, which pages resources/list and tells hosts when it changes
// (notifications/resources/list_changed). syncResources keeps it up to
// date: when the server starts, and after each call that spilled or that
// may have changed something (a call of a tool that is not read-only,
// which may have stored a conversation).

// resources is what a Server listed.
type resources struct {
	mu     sync.Mutex      // held by a sync from its listing to its last change
	listed map[string]bool // the URIs added to the SDK's server
	// hook, in tests only (nil otherwise), is told each step of a sync:
	// "waiting" before it waits for the one in progress, "listed" once
	// it has listed what is there.
	hook func(step string)
}

// step tells the test's hook, if any, that a sync reached step.
func (r *resources) step(step string) {
	if r.hook != nil {
		r.hook(step)
	}
}

// convScheme is the URI prefix of a stored conversation.
const convScheme = "myelin://conversations/"

// addTemplates adds the templates by which the workspace's files and the
// conversations are read.
func (s *Server) addTemplates() {
	if ws := s.cfg.Workspace; ws != nil {
		s.sdk.AddResourceTemplate(&sdk.ResourceTemplate{
			Name: "workspace-file", Title: "A file of the workspace",
			URITemplate: fileRootURI(ws.Dir()) + "/{+path}",
			Description: "Any file of the workspace, by its path. A text file over the inline cap gives its head and the workspace--read call that pages the rest; a symbolic link that leads out of the workspace is refused.",
		}, s.readFile)
	}
	if s.cfg.Store != nil {
		s.sdk.AddResourceTemplate(&sdk.ResourceTemplate{
			Name: "conversation", Title: "A stored conversation",
			URITemplate: convScheme + "{id}{?from,offset}", MIMEType: "application/json",
			Description: "A conversation of myelin's store as JSON: its record and its messages as stored, a page at a time from message from (0-based), each within the round bound; a message too long for a page comes in pieces of its JSON (piece; offset names where the piece starts); next names the next page.",
		}, s.readConversation)
	}
}

// syncResources makes the SDK's list of resources what the workspace and
// the store hold now: what is new is added, what is gone removed (each
// change tells the hosts, once for a burst). A source that cannot be
// read keeps what was listed from it. One sync runs at a time, its
// listing and its changes together: two calls that end together would
// otherwise both list, and the one that listed first, before the other
// call's spill, could apply its list last and remove the spill file.
func (s *Server) syncResources(ctx context.Context) {
	s.res.step("waiting")
	s.res.mu.Lock()
	defer s.res.mu.Unlock()
	want := map[string]*sdk.Resource{}
	var handlers = map[string]sdk.ResourceHandler{}
	keep := map[string]bool{} // the schemes whose source could not be read
	if ws := s.cfg.Workspace; ws != nil {
		files, err := ws.ResultFiles()
		if err != nil {
			keep["file"] = true
		}
		if len(files) > 0 && !s.mayListResults(ctx) {
			files = nil // the policy does not let the directory be listed (policy.go)
		}
		for _, f := range files {
			if !f.Regular || !s.mayList(ctx, f.Path) {
				continue // what the policy does not let be read without asking is not shown (policy.go)
			}
			u := fileURI(ws.Dir(), f.Path)
			name := path.Base(f.Path)
			want[u] = &sdk.Resource{URI: u, Name: name, Title: "Tool result file " + name, MIMEType: mimeOf(name, "text/plain"), Size: f.Size,
				Description: "A tool result kept whole in the workspace (" + f.Path + "): a spilled result's text, or a payload that is not text."}
			handlers[u] = s.readFile
		}
	}
	if st := s.cfg.Store; st != nil {
		convs, err := st.List(ctx)
		if err != nil {
			keep["myelin"] = true
		}
		for _, c := range convs {
			u := convScheme + url.PathEscape(c.ID)
			want[u] = &sdk.Resource{URI: u, Name: c.ID, Title: "Conversation " + c.ID, MIMEType: "application/json",
				Description: fmt.Sprintf("A conversation stored by myelin, started %s.", c.Created.UTC().Format("2006-01-02 15:04:05 UTC"))}
			handlers[u] = s.readConversation
		}
	}
	s.res.step("listed")
	if s.res.listed == nil {
		s.res.listed = map[string]bool{}
	}
	for u, r := range want {
		if !s.res.listed[u] {
			s.sdk.AddResource(r, handlers[u])
			s.res.listed[u] = true
		}
	}
	var gone []string
	for u := range s.res.listed {
		if want[u] == nil && !keep[scheme(u)] {
			gone = append(gone, u)
			delete(s.res.listed, u)
		}
	}
	if len(gone) > 0 {
		s.sdk.RemoveResources(gone...)
	}
}

// scheme is u's scheme.
func scheme(u string) string {
	s, _, _ := strings.Cut(u, ":")
	return s
}

// fileRootURI is the file:// URI of the directory dir (absolute).
func fileRootURI(dir string) string {
	return (&url.URL{Scheme: "file", Path: strings.TrimSuffix(dir, "/")}).String()
}

// fileURI is the file:// URI of rel, a path relative to the workspace
// root dir.
func fileURI(dir, rel string) string {
	return (&url.URL{Scheme: "file", Path: strings.TrimSuffix(dir, "/") + "/" + rel}).String()
}

// mimeOf is the MIME type of a file named name, by its extension;
// otherwise when its extension names none.
func mimeOf(name, otherwise string) string {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return otherwise
}

// refused is the error of a read a host may not make, in words.
func refused(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}
