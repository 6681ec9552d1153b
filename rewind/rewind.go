// Package rewind takes a conversation back: to an earlier point (Rewind),
// by its last turn (Undo), forward again (Redo), or onto another of its
// branches (Switch), through the store's history.Brancher, and, when
// asked, puts back the workspace files its tools — and its subagents'
// (agent--delegate) — wrote or edited in the turns it takes back,
// results kept for an unfinished round included (history.FileChange,
// docs/branches.md "Files go back"). It is what the CLI (`myelin history rewind|undo|redo|switch`)
// and the API call.
//
// It must not write to a conversation other than through the store's
// Brancher, nor touch a workspace file the tools did not record a change
// of: a file changed since by someone else is left as it is and reported
// (Skipped). Changes made by shell commands, scripts and MCP servers are
// not recorded, so never put back (NotTracked says so to the user).
package rewind

// NotTracked is the sentence every report of a rewind with files ends
// with: what it cannot put back.
const NotTracked = "changes made by shell commands, scripts and MCP tools are not tracked and were not put back"

// Workspace is the part of a workspace a rewind puts files back in
// (workspace.Workspace implements it).
type Workspace interface {
	// Current returns the content of the file at path (relative to the
	// workspace root), and false when there is no such file. An error
	// wrapping workspace.ErrNowLinked (a part of path is now a symbolic
	// link) leaves the file, its words the whole reason; so does
	// PutBack's.
	Current(path string) (data []byte, exists bool, err error)
	// PutBack makes the file at path hold data, or removes it when remove
	// is set.
	PutBack(path string, data []byte, remove bool) error
}

// Options says what a rewind does besides the conversation.
type Options struct {
	// Files, when not nil, is the workspace whose files the tools changed
	// in the turns taken back: they are put back as they were at the
	// point (Files). Nil leaves every file as it is.
	Files Workspace
}

// Files is what a rewind did to the workspace files.
type Files struct {
	// Restored are the files put back as they were, Removed the files
	// created after the point and removed, both sorted by path.
	Restored, Removed []string
	// Skipped are the files left as they are, and why, sorted by path.
	Skipped []Skipped
}

// Skipped is a file a rewind left as it is.
type Skipped struct {
	Path string
	// Why says why: changed since by someone else (its content is not
	// what the tools last wrote), its content too large to have been
	// kept, or the error putting it back.
	Why string
}
