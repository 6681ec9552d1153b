package mcp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAnApprovalHoldsForTheExactContentsAndPathOnly(t *testing.T) {
	store := TrustStore{Path: filepath.Join(t.TempDir(), "config", "myelin", TrustFileName)}
	ws := t.TempDir()
	path := filepath.Join(ws, ".mcp.json")
	data := []byte(`{"mcpServers":{"x":{"command":"sh"}}}`)
	if ok, err := store.Approved(path, data); ok || err != nil {
		t.Fatalf("before any approval: %v %v", ok, err)
	}
	if err := store.Approve(path, data); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		data []byte
		want bool
	}{
		{"the approved contents", path, data, true},
		{"one byte more", path, append(append([]byte{}, data...), '\n'), false},
		{"another workspace's file", filepath.Join(t.TempDir(), ".mcp.json"), data, false},
	}
	for _, tt := range tests {
		if ok, err := store.Approved(tt.path, tt.data); ok != tt.want || err != nil {
			t.Errorf("%s: approved %v (%v), want %v", tt.name, ok, err, tt.want)
		}
	}
	st, err := os.Stat(store.Path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the approvals file: %v, mode %v, want 0600", err, st.Mode())
	}
}

func TestABrokenApprovalsFileIsAnErrorNamingIt(t *testing.T) {
	store := TrustStore{Path: filepath.Join(t.TempDir(), TrustFileName)}
	os.WriteFile(store.Path, []byte("{not json"), 0o600)
	_, err := store.Approved("/w/.mcp.json", nil)
	if err == nil || !strings.Contains(err.Error(), store.Path) || !strings.Contains(err.Error(), "myelin mcp trust") {
		t.Errorf("got %v", err)
	}
}

func TestDescribeShowsWhatAServerRuns(t *testing.T) {
	rerun, norerun := true, false
	tests := []struct {
		s    Server
		want string
	}{
		{Server{Name: "fs", Type: "stdio", Command: "npx", Args: []string{"-y", "server-filesystem", "."}}, "fs: npx -y server-filesystem ."},
		{Server{Name: "x", Type: "stdio", Command: "sh", Args: []string{"-c", "id > ../pwned"}, Cwd: "sub dir", Env: map[string]string{"B": "1", "A": "2"}}, `x: sh -c "id > ../pwned" (in "sub dir" — in the workspace, whose files the model can write) (sets A, B)`},
		{Server{Name: "abs", Type: "stdio", Command: "srv", Cwd: "/opt/srv"}, "abs: srv (in /opt/srv)"},
		{Server{Name: "up", Type: "stdio", Command: "srv", Cwd: "../srv"}, "up: srv (in ../srv)"},
		{Server{Name: "nl", Type: "stdio", Command: "a\nb"}, `nl: "a\nb"`},
		{Server{Name: "web", Type: "http", URL: "https://h/mcp"}, "web: https://h/mcp (HTTP)"},
		{Server{Name: "web", Type: "http", URL: "https://h/mcp", Rerun: &rerun}, `web: https://h/mcp (HTTP) (its tools' calls are run again after a crash: "rerun": true)`},
		{Server{Name: "fs", Type: "stdio", Command: "fs", Rerun: &rerun}, `fs: fs (its tools' calls are run again after a crash: "rerun": true)`},
		{Server{Name: "fs", Type: "stdio", Command: "fs", Rerun: &norerun}, `fs: fs`},
	}
	for _, tt := range tests {
		if got := Describe(tt.s); got != tt.want {
			t.Errorf("Describe(%s) = %q, want %q", tt.s.Name, got, tt.want)
		}
	}
}
