// Package mcp owns myelin's side of MCP servers: their configuration (the
// `mcpServers` JSON other MCP hosts read), the client that starts and
// connects them (stdio and streamable HTTP, on the go-sdk), their lifecycle,
// and the tools they offer, under names providers take.
//
// It must not turn a tool result into text: it hands the raw result JSON
// to result.FromMCP, and from there the result goes through the one
// conversion like any other. A server gets only the environment its entry
// names, plus PATH and HOME, and runs in an empty directory of its own
// unless its entry names a cwd: package mcp must not start a server in the
// workspace, whose files the model writes, by default. A stdio server is
// started through package child, so that it and what it starts never
// outlive myelin; package mcp must not start processes any other way. What servers ask during a call
// (elicitation, sampling) goes to the Elicitor and Sampler its caller
// supplies: package mcp must not read a terminal or pick a model itself.
package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/myelin-run/myelin/mcp/oauth"
)

// Server is one entry of `mcpServers`: a stdio server (Command) or a
// streamable HTTP one (URL).
type Server struct {
	Name    string            `json:"-"`
	Type    string            `json:"type,omitempty"` // "stdio", "http" or "streamable-http"; inferred when empty
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// OAuth says how myelin signs in to an HTTP server that asks for
	// authorisation (package oauth); without it, such a server gets the
	// authorisation code flow with dynamic client registration.
	OAuth *oauth.Config `json:"oauth,omitempty"`
	// TimeoutMS bounds each call to the server's tools; 0 means
	// DefaultCallTimeout.
	TimeoutMS int `json:"timeout,omitempty"`
	// Rerun, when set, says whether every tool of the server may be run
	// again when a conversation is recovered after its process stopped
	// mid-call (tool.Tool.Rerun), in place of the tools' own annotations
	// (readOnlyHint, idempotentHint, destructiveHint), which are the
	// server's claims: false when they are not to be trusted, true for a
	// server whose tools only read but do not say so.
	Rerun *bool `json:"rerun,omitempty"`
	// Sampling, when set, lets the server ask the conversation's model to
	// complete (sampling/createMessage), within this budget for the
	// process's life; unset, it may not.
	Sampling *SamplingBudget `json:"sampling,omitempty"`
	// Sandbox, for a stdio server, confines it as shell--run's commands
	// are (package sandbox): "workspace-write" or "read-only". Unset or
	// "off", it runs with the user's rights (docs/mcp.md, "Sandbox").
	Sandbox string `json:"sandbox,omitempty"`
	// SandboxNetwork lets a sandboxed server reach the network.
	SandboxNetwork bool `json:"sandboxNetwork,omitempty"`
	// SandboxWrite are more directories a sandboxed server may write
	// (its cache, its data), absolute paths.
	SandboxWrite []string `json:"sandboxWrite,omitempty"`
	// Problem, when set, keeps the server from starting: its entry uses
	// a variable that is not set. Start reports it as the server's
	// failure, and the other servers start.
	Problem string `json:"-"`
}

// SamplingBudget bounds a server's sampling requests: how many, and how
// many tokens all of them may take (each request's maxTokens is reserved
// while it runs; what it used is counted after).
type SamplingBudget struct {
	Requests int   `json:"maxRequests"`
	Tokens   int64 `json:"maxTokens"`
}

// DefaultCallTimeout bounds a call to an MCP tool when its server's entry
// sets no timeout.
const DefaultCallTimeout = 120 * time.Second

// CallTimeout is the bound on each call to the server's tools.
func (s Server) CallTimeout() time.Duration {
	if s.TimeoutMS > 0 {
		return time.Duration(s.TimeoutMS) * time.Millisecond
	}
	return DefaultCallTimeout
}

// Stdio reports whether the server is started as a process.
func (s Server) Stdio() bool { return s.Type == "stdio" }

// ParseConfig reads a `{"mcpServers": {...}}` document and returns its
// servers sorted by name, with `${VAR}` and `${VAR:-default}` expanded in
// every string from lookup (os.LookupEnv when nil). An entry that names
// neither a command nor a URL, or a transport myelin does not speak, is an
// error naming the server and the field; a variable that is not set and
// has no default is that server's Problem, so that the others still start.
// source names the document in errors.
func ParseConfig(source string, data []byte, lookup func(string) (string, bool)) ([]Server, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	var doc struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: not an mcpServers document: %w", source, err)
	}
	if doc.MCPServers == nil {
		return nil, fmt.Errorf(`%s: no "mcpServers" object`, source)
	}
	names := make([]string, 0, len(doc.MCPServers))
	for name := range doc.MCPServers {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []Server
	for _, name := range names {
		var s Server
		if err := json.Unmarshal(doc.MCPServers[name], &s); err != nil {
			return nil, fmt.Errorf("%s: server %q: %w", source, name, err)
		}
		s.Name = name
		if err := s.expand(lookup); err != nil {
			s.Problem = fmt.Sprintf("%s: %v", source, err)
		}
		if err := s.check(); err != nil {
			return nil, fmt.Errorf("%s: server %q: %w", source, name, err)
		}
		out = append(out, s)
	}
	return out, nil
}

func (s *Server) check() error {
	switch s.Type {
	case "":
		switch {
		case s.Command != "" && s.URL != "":
			return fmt.Errorf(`give "command" (a stdio server) or "url" (an HTTP server), not both`)
		case s.Command != "":
			s.Type = "stdio"
		case s.URL != "":
			s.Type = "http"
		default:
			return fmt.Errorf(`no "command" or "url": myelin cannot reach it`)
		}
	case "stdio":
		if s.Command == "" {
			return fmt.Errorf(`type "stdio" needs a "command"`)
		}
	case "http", "streamable-http", "streamableHttp":
		if s.URL == "" {
			return fmt.Errorf(`type %q needs a "url"`, s.Type)
		}
		s.Type = "http"
	case "sse":
		return fmt.Errorf(`type "sse" (the old HTTP+SSE transport) is not supported; use the server's streamable HTTP endpoint`)
	default:
		return fmt.Errorf("type %q is not a transport myelin speaks (stdio, http)", s.Type)
	}
	if b := s.Sampling; b != nil && (b.Requests <= 0 || b.Tokens <= 0) {
		return fmt.Errorf(`"sampling" needs a positive "maxRequests" and "maxTokens", got %d and %d`, b.Requests, b.Tokens)
	}
	if err := s.checkSandbox(); err != nil {
		return err
	}
	if s.TimeoutMS < 0 {
		return fmt.Errorf(`"timeout" must be positive, got %d`, s.TimeoutMS)
	}
	if s.OAuth != nil {
		if s.Type != "http" {
			return fmt.Errorf(`"oauth" is for HTTP servers; a stdio server gets its credentials through "env"`)
		}
		if err := s.OAuth.Check(); err != nil {
			return err
		}
	}
	return nil
}

// Compiled at its first use, not at init: every myelin process ran the init (issue 34).
var varRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`) })

// expand replaces ${VAR} and ${VAR:-default} in every string of the entry.
func (s *Server) expand(lookup func(string) (string, bool)) error {
	var err error
	one := func(field, v string) string {
		return varRef().ReplaceAllStringFunc(v, func(ref string) string {
			m := varRef().FindStringSubmatch(ref)
			if val, ok := lookup(m[1]); ok {
				return val
			}
			if m[2] != "" {
				return m[3]
			}
			if err == nil {
				err = fmt.Errorf("%s uses ${%s}, which is not set (give it a value, or a default: ${%s:-value})", field, m[1], m[1])
			}
			return ref
		})
	}
	s.Command = one("command", s.Command)
	for i, a := range s.Args {
		s.Args[i] = one(fmt.Sprintf("args[%d]", i), a)
	}
	for k, v := range s.Env {
		s.Env[k] = one("env."+k, v)
	}
	s.Cwd = one("cwd", s.Cwd)
	for i, d := range s.SandboxWrite {
		s.SandboxWrite[i] = one(fmt.Sprintf("sandboxWrite[%d]", i), d)
	}
	s.URL = one("url", s.URL)
	for k, v := range s.Headers {
		s.Headers[k] = one("headers."+k, v)
	}
	if s.OAuth != nil {
		fields := s.OAuth.Strings()
		for _, k := range slices.Sorted(maps.Keys(fields)) {
			*fields[k] = one("oauth."+k, *fields[k])
		}
	}
	return err
}

// Environ is the environment a stdio server starts with: the variables its
// entry names, and PATH and HOME from myelin's own (lookup; os.LookupEnv
// when nil) — not the rest, which may hold other services' keys. Sorted,
// so that it is the same every time.
func (s Server) Environ(lookup func(string) (string, bool)) []string {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	env := map[string]string{}
	for _, k := range []string{"PATH", "HOME"} {
		if v, ok := lookup(k); ok {
			env[k] = v
		}
	}
	for k, v := range s.Env {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// LoadConfig reads the servers of the given config files, in order; a
// server named again in a later file replaces the earlier entry. A path
// that does not exist is skipped when optional is true for it (the
// workspace's .mcp.json) and an error otherwise (--mcp-config).
func LoadConfig(files []ConfigFile, lookup func(string) (string, bool)) ([]Server, error) {
	byName := map[string]Server{}
	for _, f := range files {
		data, err := f.Data, error(nil)
		if data == nil {
			data, err = os.ReadFile(f.Path)
		}
		if err != nil {
			if f.Optional && os.IsNotExist(err) {
				continue
			}
			return nil, fmt.Errorf("MCP config %s: %w", f.Path, err)
		}
		servers, err := ParseConfig(f.Path, data, lookup)
		if err != nil {
			return nil, err
		}
		for _, s := range servers {
			byName[s.Name] = s
		}
	}
	out := make([]Server, 0, len(byName))
	for _, s := range byName {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Server) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// ConfigFile is one config file to read.
type ConfigFile struct {
	Path     string
	Optional bool // a missing file is no error (the workspace's .mcp.json)
	// Data, when not nil, is the file's contents, already read: the
	// contents the user approved, so that the servers started are those
	// and not a later write's.
	Data []byte
}
