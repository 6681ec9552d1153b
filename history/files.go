package history

// This file is the contract of the files a rewind puts back (issue 30,
// docs/branches.md "Files go back"): each workspace write or edit stores
// what it replaced, by hash, beside the conversation's spill files.

// FileChange is what one tool call did to one workspace file: the content
// it replaced and the content it wrote, each kept by its hash (BlobHash)
// in the store's Blobs under the conversation, at FileVersionPath(hash).
// It is stored on the call's result (Part.Files), so that it moves with
// the messages a rewind or a switch moves, and a rewind to before the
// call can put the file back as it was (package rewind). It records only
// what the workspace tools did: a shell command's or a script's changes
// are not tracked. No wire sends it.
type FileChange struct {
	// Path is the file's path relative to the workspace root,
	// slash-separated, as the tool resolved it.
	Path string `json:"path"`
	// Created marks a file the call created; Before is then "".
	Created bool `json:"created,omitempty"`
	// Before is the hash of the content the call replaced, "" when the
	// file was created or its content was over MaxKeptFile bytes (then
	// nothing can put it back, and a rewind says so).
	Before string `json:"before,omitempty"`
	// After is the hash of the content the call wrote, "" when it was
	// over MaxKeptFile bytes.
	After string `json:"after,omitempty"`
}

// MaxKeptFile is the largest file content, in bytes, whose versions are
// kept for a rewind (FileChange): a larger one is still written, and its
// change recorded without the bytes.
const MaxKeptFile = 16 << 20

// FileVersionPath is the path under which a Blobs store keeps, for a
// conversation, the file version whose hash is hash (FileChange). It is
// not a workspace path (it starts with a slash), so no workspace read ever
// fetches it as a file of the workspace; BlobByHash reads it back.
func FileVersionPath(hash string) string { return "/file-versions/" + hash }
