package mcp

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/myelin-run/myelin/sandbox"
)

// A stdio server's entry may ask for it to be confined like shell--run's
// commands: "sandbox": "workspace-write" or "read-only", with
// "sandboxNetwork": true to let it reach the network and "sandboxWrite"
// for more directories it may write. Unset, a server runs with the user's
// rights, as before: servers are programs the user chose to run, and most
// need what a default sandbox takes away — the network (an API, a
// registry), their own caches and credentials under the home directory
// (~/.npm, ~/.cache/uv, ~/.config/gh). The entry says what it needs; the
// approval of a workspace's .mcp.json shows it (Describe).

// checkSandbox refuses an entry's sandbox settings that are not a mode,
// that confine an HTTP server (myelin starts no process for it), or that
// loosen a sandbox the entry does not ask for.
func (s *Server) checkSandbox() error {
	switch sandbox.Mode(s.Sandbox) {
	case "", sandbox.Off, sandbox.WorkspaceWrite, sandbox.ReadOnly:
	default:
		return fmt.Errorf(`"sandbox": %q is not a mode: give "workspace-write", "read-only" or "off" (the default)`, s.Sandbox)
	}
	if s.Type != "stdio" && s.Sandbox != "" {
		return fmt.Errorf(`"sandbox" is for stdio servers, which myelin starts; an HTTP server runs where it runs`)
	}
	if !s.sandboxed() {
		var moot []string
		if s.SandboxNetwork {
			moot = append(moot, `"sandboxNetwork"`)
		}
		if len(s.SandboxWrite) > 0 {
			moot = append(moot, `"sandboxWrite"`)
		}
		if len(moot) > 0 {
			return fmt.Errorf(`%s only loosen a sandbox, and the entry asks for none: give it "sandbox": "workspace-write" or "read-only", or leave them out`, strings.Join(moot, " and "))
		}
	}
	if s.Problem == "" { // an unset variable left its ${...} in place
		for i, d := range s.SandboxWrite {
			if !filepath.IsAbs(d) {
				return fmt.Errorf(`"sandboxWrite"[%d] %q: give an absolute path (${HOME}/.npm, say)`, i, d)
			}
		}
	}
	return nil
}

// sandboxed reports whether the entry asks for a sandbox.
func (s Server) sandboxed() bool {
	return s.Sandbox != "" && sandbox.Mode(s.Sandbox) != sandbox.Off
}

// SandboxPolicy is how the server is confined when it is started, and
// whether it is at all: its entry's mode, network and directories; the
// variables its entry sets pass, as PATH and HOME do (Environ: nothing
// else of myelin's environment reaches a server anyway); dir, the empty
// directory of its own it runs in (workDir), is writable.
func (s Server) SandboxPolicy(dir string) (sandbox.Policy, bool) {
	if !s.sandboxed() {
		return sandbox.Policy{Mode: sandbox.Off}, false
	}
	p := sandbox.Policy{Mode: sandbox.Mode(s.Sandbox), Network: s.SandboxNetwork}
	p.Writable = append(p.Writable, s.SandboxWrite...)
	if dir != "" {
		p.Writable = append(p.Writable, dir)
	}
	p.Env = append(p.Env, "PATH", "HOME")
	for k := range s.Env {
		p.Env = append(p.Env, k)
	}
	slices.Sort(p.Env)
	p.Env = slices.Compact(p.Env)
	return p, true
}

// applySandbox prepares cmd, the server's process not yet started, to run
// confined as its entry asks; dir is the directory it runs in, private
// when it is the empty directory of its own (workDir), which it may then
// write; root is the workspace.
func applySandbox(s Server, cmd *exec.Cmd, dir string, private bool, root string) error {
	if !private {
		dir = ""
	}
	p, ok := s.SandboxPolicy(dir)
	if !ok {
		return nil
	}
	if err := p.Apply(cmd, root); err != nil {
		if errors.Is(err, sandbox.ErrUnavailable) {
			return fmt.Errorf(`its entry asks for "sandbox": %q, and no sandbox is available here (%w): give it "sandbox": "off" to run it unconfined, with your rights`, s.Sandbox, err)
		}
		return fmt.Errorf(`confining it ("sandbox": %q): %w`, s.Sandbox, err)
	}
	return nil
}

// sandboxNote says, for the one who approves an entry, how it is
// confined: nothing for an entry that asks for no sandbox.
func sandboxNote(s Server) string {
	if !s.sandboxed() {
		return ""
	}
	note := " (sandboxed: " + s.Sandbox
	if s.SandboxNetwork {
		note += ", with the network"
	} else {
		note += ", no network"
	}
	if len(s.SandboxWrite) > 0 {
		words := make([]string, len(s.SandboxWrite))
		for i, d := range s.SandboxWrite {
			words[i] = quoteWord(d)
		}
		note += ", writes " + strings.Join(words, ", ")
	}
	return note + ")"
}
