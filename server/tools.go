package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

// ToolOutput is a tool call's answer: the same text, error flag,
// structured content and spill path as `myelin tool call --json`
// (contract §10).
type ToolOutput struct {
	Text       string          `json:"text"`
	IsError    bool            `json:"is_error"`
	Structured json.RawMessage `json:"structured,omitempty"`
	SpillPath  string          `json:"spill_path,omitempty"`
}

func outputOf(o result.Output) ToolOutput {
	return ToolOutput{Text: o.Text, IsError: o.IsError, Structured: o.Structured, SpillPath: o.SpillPath}
}

// listTools serves the tool definitions as the model is sent them.
func (s *Server) listTools(w http.ResponseWriter, r *http.Request) {
	a := s.Agent
	if reg, _ := s.currentTools(); reg != a.Tools {
		a = a.Clone()
		a.Tools = reg
	}
	defs, err := a.ToolDefs()
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	type def struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	out := struct {
		Tools []def `json:"tools"`
	}{Tools: make([]def, 0, len(defs))}
	for _, d := range defs {
		out.Tools = append(out.Tools, def{d.Name, d.Description, d.InputSchema})
	}
	writeJSON(w, http.StatusOK, out)
}

// callTool runs one call of a tool, its body the call's input (a JSON
// object; empty means {}), and answers its output. A call that fails is
// still 200: its error is the output's text, with is_error set, as the
// model would read it. An unknown tool is 404.
func (s *Server) callTool(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	reg, _ := s.currentTools()
	if reg.Get(name) == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no tool %q; GET /v1/tools lists them", name))
		return
	}
	var input json.RawMessage
	if err := readJSON(r, &input); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	// an empty body or null is a call with no arguments: the dispatcher
	// takes both as {}
	d := &tool.Dispatcher{Tools: reg, Env: s.Agent.Env, Timeout: s.Agent.ToolTimeout}
	out := d.Call(r.Context(), tool.Call{ID: "api_" + newTurnID()[5:], Name: name, Input: input})
	writeJSON(w, http.StatusOK, outputOf(out))
}

// spillDir is where spill files live, relative to the workspace root; the
// spills endpoint reads nothing else.
const spillDir = ".myelin/tool-results/"

// insideSpills refuses a path under spillDir that a symbolic link leads
// out of it (workspace--read follows links inside the workspace, and the
// spills endpoint reads spill files only). A path that does not exist
// passes: the read says so. A link swapped in after this check is not
// caught; the workspace's own confinement (contract §11) still holds.
func (s *Server) insideSpills(path string) error {
	root := s.Workspace.Dir()
	real, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(path)))
	if err != nil {
		return nil
	}
	spills, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(spillDir)))
	if err != nil {
		return nil
	}
	if rel, err := filepath.Rel(spills, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%q is not a spill file: a symbolic link leads it out of %s", path, spillDir)
	}
	return nil
}

// spill serves one page of a spill file through workspace--read's own
// pager and conversion: the same text a model's ready call gets, with the
// same page numbers in its structured content.
func (s *Server) spill(w http.ResponseWriter, r *http.Request) {
	path := r.PathValue("path")
	if !strings.HasPrefix(path, spillDir) || strings.Contains(path, "..") {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%q is not a spill file: spill files are under %s", path, spillDir))
		return
	}
	if strings.Contains(path, `"`) {
		// workspace--read unquotes a quoted path or component (a name it
		// shows quoted), so "link.txt" would be read as link.txt, a file
		// insideSpills never looked at; spill files have plain names
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%q is not a spill file: spill files have plain names, with no double quote", path))
		return
	}
	if err := s.insideSpills(path); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	in := map[string]any{"path": path}
	q := r.URL.Query()
	for _, k := range []string{"offset", "limit", "offsetChars", "limitChars"} {
		v := q.Get(k)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("%s is %q: it must be a whole number", k, v))
			return
		}
		in[k] = n
	}
	reg := &tool.Registry{}
	for _, t := range s.Workspace.Tools() {
		if t.Name == "workspace--read" {
			if err := reg.Add(t); err != nil {
				writeError(w, http.StatusInternalServerError, err.Error())
				return
			}
		}
	}
	input, _ := json.Marshal(in)
	d := &tool.Dispatcher{Tools: reg, Env: s.Agent.Env}
	out := d.Call(r.Context(), tool.Call{ID: "api_spill", Name: "workspace--read", Input: input})
	if out.IsError {
		// an error answer like every other (the OpenAPI document's Error,
		// which the inspector reads), its message the pager's own words
		status := http.StatusBadRequest
		if strings.Contains(out.Text, "no such file") || strings.Contains(out.Text, "does not exist") {
			status = http.StatusNotFound
		}
		writeError(w, status, out.Text)
		return
	}
	writeJSON(w, http.StatusOK, outputOf(out))
}
