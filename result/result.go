// Package result owns the one conversion of a tool result into text (contract
// §1–§6): what the model reads, what history stores, what a spill file holds
// and what a script or the API gets all come from [Round] (or [One], a round
// of one call).
//
// It defines the result model ([Result] and the [Block] union), reads
// MCP-shaped results ([FromMCP]), makes text well formed, encodes other values
// as deterministic compact JSON, applies the inline cap and the round bound,
// and writes spill files and binary payloads through a [Store].
//
// It must not do I/O of its own (files go through the Store it is given, and
// its one exception is reading, then removing, the file of a [TextFile] a
// tool handed over), know about providers, tools or MCP sessions, or let any
// other package convert a result: a consumer takes the [Text] it returns and
// never re-encodes it.
package result

import (
	"encoding/json"
	"errors"
)

// Result is what one tool call returns.
//
// The zero value is a success with nothing in it, whose text is empty.
type Result struct {
	// Data is what the tool returned: a string (or []byte), a []Block, a
	// [TextFile] (text that lives in a file), or any other value, which
	// becomes compact JSON. nil means nothing. An error value makes the
	// result an error with the error's text.
	Data any

	// Structured is structured content for programs (scripts, the API). It is
	// kept by presence: nil means none, and json.RawMessage("null") is a
	// present null. The model reads it, as JSON, only when Data holds no text
	// of its own.
	Structured any

	// IsError flags the result as an error; its text is the error text.
	IsError bool

	// EndTurn asks the agent to end its turn after this round.
	EndTurn bool

	// Reply is the head of the tool's own reply as it came, when it had
	// one (an MCP server's result JSON, set by FromMCP: at most ReplyKept
	// bytes, a copy, so that a big reply is not held while it converts),
	// and ReplySize the whole reply's size: for people inspecting a call
	// (the API's inspector). Never sent, never converted.
	Reply     []byte
	ReplySize int
}

// ReplyKept is how much of a tool's own reply an Output keeps.
const ReplyKept = 64 << 10

// Error returns an error result whose text is msg.
func Error(msg string) Result { return Result{Data: msg, IsError: true} }

// FromError returns the error result for err, or a success holding data when
// err is nil. It is how a handler's (value, error) pair becomes a Result.
func FromError(data any, err error) Result {
	if err != nil {
		return Error(err.Error())
	}
	if r, ok := data.(Result); ok {
		return r
	}
	if r, ok := data.(*Result); ok && r != nil {
		return *r
	}
	return Result{Data: data}
}

// Block is one content block, the MCP shapes: [TextBlock], [ImageBlock],
// [AudioBlock], [ResourceBlock], [ResourceLinkBlock] and [UnknownBlock].
// The set is closed; a block of another kind can only be an UnknownBlock.
type Block interface{ isBlock() }

// TextBlock is text, read verbatim (made well formed).
type TextBlock struct {
	Text string // the text
}

// ImageBlock is an image with its bytes. It goes natively on the wire and as
// a placeholder in history; its bytes never become base64 text.
type ImageBlock struct {
	MIMEType string // e.g. image/png; sniffed from Data when empty
	Data     []byte // the image's bytes, not base64
}

// AudioBlock is audio with its bytes; they are saved as a workspace file.
type AudioBlock struct {
	MIMEType string // e.g. audio/wav
	Data     []byte // the audio's bytes, not base64
}

// ResourceBlock is an embedded resource: text (Blob nil) or binary (Blob set,
// saved as a workspace file).
type ResourceBlock struct {
	URI      string // the resource's URI, shown in its stub
	MIMEType string // its MIME type
	Text     string // its text, when Blob is nil
	Blob     []byte // its bytes, when it is binary
}

// ResourceLinkBlock points at a resource that was not fetched.
type ResourceLinkBlock struct {
	URI      string // where the resource is
	Name     string // its name, shown in the stub
	MIMEType string // its MIME type, if the server gave one
}

// UnknownBlock is a block of a type this package does not know. It reaches
// the model as its compact JSON.
type UnknownBlock struct {
	Raw json.RawMessage // the block as the server sent it
}

func (TextBlock) isBlock()         {}
func (ImageBlock) isBlock()        {}
func (AudioBlock) isBlock()        {}
func (ResourceBlock) isBlock()     {}
func (ResourceLinkBlock) isBlock() {}
func (UnknownBlock) isBlock()      {}

// Store is where a result's files go: spill files and binary payloads, under
// .myelin/tool-results/ in the workspace. It is defined here, where it is
// used; the workspace implements it.
type Store interface {
	// Save writes data to a new file named name under .myelin/tool-results/
	// and returns its workspace-relative path. It never overwrites: when the
	// name is taken it picks another (name-2.ext, name-3.ext, ...).
	Save(name string, data string) (path string, err error)
}

// ErrNoWorkspace is what a nil Store reports: there is no writable
// workspace to save to.
var ErrNoWorkspace = errors.New("no writable workspace")
