// Package history owns the stored conversation: the message model that
// every request is built from, the Store interface that keeps it, and
// Memory, a Store in this process only. The durable stores are packages of
// their own, so that a package that only reads messages (a wire, window,
// agent) links no database driver: history/sqlite (one file, the CLI's
// default) and history/postgres (shared by workers).
//
// What it stores is never re-rendered: a tool result's text is the text
// package result gave, kept as it was, so that a request built from the
// store after a restart is byte for byte the request the same process would
// have built (contract §7). It must not know provider wire formats (packages
// under provider/ turn messages into requests) or run tools.
package history

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/myelin-run/myelin/history/internal/record"
	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/result"
)

// Role is who a message is from.
type Role string

// The roles of a conversation. Tool results travel in a user message, as
// both provider wires need them right after the assistant message that
// asked for them.
const (
	User      Role = "user"
	Assistant Role = "assistant"
)

// PartType names the kind of a Part.
type PartType string

// The kinds of part.
const (
	TextPart       PartType = "text"        // Text
	ToolCallPart   PartType = "tool_call"   // CallID, Name, Input
	ToolResultPart PartType = "tool_result" // CallID, Text, IsError, Images
	// ReasoningPart is the model's reasoning as its wire must send it
	// back (Wire, Raw; Text is its readable form, "" when the provider
	// gave none): Anthropic's thinking and redacted_thinking blocks with
	// their signatures, an OpenAI Responses reasoning item with its
	// encrypted content, a Gemini thought. A wire sends back only the
	// reasoning of its own Wire, Raw byte for byte, and no other.
	ReasoningPart PartType = "reasoning"
)

// Part is one part of a message; Type says which fields it uses.
type Part struct {
	Type PartType `json:"type"`
	// Text is a text part's text, or a tool result's text: the text of
	// result.Output, as stored and as sent. On a tool call whose input was
	// not JSON, it is that input as the model sent it (Input is then empty).
	Text string `json:"text,omitempty"`
	// CallID ties a tool result to its tool call.
	CallID string `json:"call_id,omitempty"`
	// Name is the tool a call names.
	Name string `json:"name,omitempty"`
	// Input is a tool call's arguments, as the model gave them.
	Input json.RawMessage `json:"input,omitempty"`
	// IsError flags an error result.
	IsError bool `json:"is_error,omitempty"`
	// Images are a tool result's images, sent natively where the wire
	// takes them; Text holds their placeholders.
	Images []result.Image `json:"images,omitempty"`
	// SpillPath is where a spilled result is kept whole, for people and
	// programs reading the history; it is not sent.
	SpillPath string `json:"spill_path,omitempty"`
	// Wire names the wire whose own shape Raw and Signature are in
	// ("anthropic", "openai-responses", "gemini"); a wire sends them only
	// when Wire is its own.
	Wire string `json:"wire,omitempty"`
	// Raw is, on a ReasoningPart, the block or item exactly as its wire
	// sends it back; on a TextPart of the openai-responses wire, the phase
	// of the message it came in (a JSON string), sent back with it.
	Raw json.RawMessage `json:"raw,omitempty"`
	// Signature is an opaque token the provider attached to this part and
	// wants back with it (Gemini's thought signature on a call or text).
	Signature string `json:"signature,omitempty"`
	// Permission is, on a tool result, what the permission policy (or a
	// person) decided of its call and by whom (SPEC §14, the audit
	// trail); nil when no policy checked it. It is for people and
	// programs reading the history: no wire sends it.
	Permission *permission.Record `json:"permission,omitempty"`
	// Files are, on a tool result, the workspace files its call wrote or
	// edited (workspace--write, workspace--edit) and what they held before
	// and after, so that a rewind can put them back (FileChange). No wire
	// sends them.
	Files []FileChange `json:"files,omitempty"`
}

// Usage is what one provider request cost, in tokens.
type Usage struct {
	Input      int `json:"input"`       // input tokens not read from or written to the cache
	Output     int `json:"output"`      // output tokens
	CacheRead  int `json:"cache_read"`  // input tokens read from the prompt cache
	CacheWrite int `json:"cache_write"` // input tokens written to the prompt cache
	// CacheWrite1h is how many of CacheWrite were written with the
	// one-hour lifetime (Anthropic's family, --cache-ttl 1h), which is
	// priced higher than the five-minute one; 0 when none or not told.
	CacheWrite1h int `json:"cache_write_1h,omitempty"`
}

// Add adds u2 to u.
func (u *Usage) Add(u2 Usage) {
	u.Input += u2.Input
	u.Output += u2.Output
	u.CacheRead += u2.CacheRead
	u.CacheWrite += u2.CacheWrite
	u.CacheWrite1h += u2.CacheWrite1h
}

// Message is one message of a conversation.
type Message struct {
	Role  Role   `json:"role"`
	Parts []Part `json:"parts"`
	// Usage is, on an assistant message, the usage of the request that
	// produced it; nil elsewhere.
	Usage *Usage `json:"usage,omitempty"`
	// Time is when the message was stored; set by the Store.
	Time time.Time `json:"time"`
	// Cut marks an assistant answer cut off mid-stream (the user stopped
	// it, the connection dropped, the request failed): its parts are the
	// text that had streamed, then a text part holding the marker the
	// model reads (see agent.CutMarker). It is for people and programs;
	// wires send the parts alone.
	Cut bool `json:"cut,omitempty"`
	// Edit is, on a Context record, the decision it stores about the
	// requests from its place on; nil elsewhere.
	Edit *Edit `json:"edit,omitempty"`
	// Settings is, on an assistant message, what the request that
	// produced it was sent with besides its messages, when that differs
	// from the last Settings stored before it (so the first answer of a
	// conversation has them); nil elsewhere.
	Settings *Settings `json:"settings,omitempty"`
}

// Text is the message's text: its text parts joined, as the model wrote
// them (an answer's text; a cut answer's holds its marker).
func (m Message) Text() string {
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Type == TextPart {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// HoldsResults reports whether the message carries tool results: a user
// message that answers a round, not a prompt.
func (m Message) HoldsResults() bool {
	for _, p := range m.Parts {
		if p.Type == ToolResultPart {
			return true
		}
	}
	return false
}

// ToolCalls returns the message's tool call parts.
func (m Message) ToolCalls() []Part {
	n := 0
	for _, p := range m.Parts {
		if p.Type == ToolCallPart {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	calls := make([]Part, 0, n) // one allocation, not one a doubling
	for _, p := range m.Parts {
		if p.Type == ToolCallPart {
			calls = append(calls, p)
		}
	}
	return calls
}

// Conversation is a conversation's record, without its messages.
type Conversation struct {
	ID string `json:"id"`
	// System is the system prompt the conversation was started with; a
	// continued conversation keeps it, so its requests stay the same.
	System  string    `json:"system"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	// Messages is how many messages it holds (set by List and Get).
	Messages int `json:"messages"`
	// Parent is, on a conversation a tool call started (a subagent's,
	// agent--delegate), the conversation that made the call; "" on one a
	// user started. ParentCall is that call's id. Both are set by Create,
	// checksummed with the record and never changed; Create refuses a
	// Parent that is not in the store, a ParentCall without a Parent,
	// and a conversation that is its own parent. Children finds them
	// from the parent's side.
	Parent     string `json:"parent,omitempty"`
	ParentCall string `json:"parent_call,omitempty"`
	// Base is, on a fork or a branch (Brancher), the conversation whose
	// first BaseAt messages are this one's first BaseAt, shared by
	// reference: they are read from Base, never copied. A Rewind or
	// Switch of Base may point Base elsewhere, always at the same
	// messages. "" with BaseAt 0 on a conversation that shares nothing.
	Base   string `json:"base,omitempty"`
	BaseAt int    `json:"base_at,omitempty"`
	// BranchOf is, on a branch, the conversation it was rewound from: a
	// branch holds what followed the rewind point, kept to switch back to
	// (Brancher.Switch). List leaves branches out; Branches lists them.
	BranchOf string `json:"branch_of,omitempty"`
}

// Family is what a Store gives to find the conversations a conversation's
// tool calls started (Conversation.Parent); every store of this module
// implements it. Use Children, which takes any Store.
type Family interface {
	// Children returns the conversations whose Parent is id, oldest
	// first (by creation, then id); none is not an error, nor is an id
	// not in the store.
	Children(ctx context.Context, id string) ([]Conversation, error)
}

// Children returns the conversations started by conversation id's tool
// calls (Conversation.Parent), oldest first: through the store's own
// Family when it has one, else by reading the whole List.
func Children(ctx context.Context, s Store, id string) ([]Conversation, error) {
	if f, ok := s.(Family); ok {
		return f.Children(ctx, id)
	}
	all, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []Conversation
	for _, c := range all {
		if c.Parent == id {
			out = append(out, c)
		}
	}
	SortChildren(out)
	return out, nil
}

// SortChildren puts children in Children's order: by creation, then id.
func SortChildren(cs []Conversation) {
	slices.SortFunc(cs, func(a, b Conversation) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// Store keeps conversations durably. Implementations must make Append
// atomic and durable: when it returns nil, the messages survive a crash of
// the process.
//
// A conversation has one writer at a time (contract §7): a writer takes its
// claim (Claim) when a turn starts, renews it while the turn runs (Renew)
// and gives it up when the turn ends (Release). Every write (Append, Keep)
// checks the claim in its own transaction: under Writing(ctx, h) it is
// refused with ErrClaimLost unless h holds the claim; without Writing it
// is refused with a *HeldError while a live holder has it. The claim is
// the store's so that every process, worker and API request sharing the
// store obeys the same one; an implementation must not keep it in memory.
type Store interface {
	// Create starts a conversation; its ID must be new: an id taken (also
	// by another process at the same moment) is an error wrapping
	// ErrExists.
	Create(ctx context.Context, c Conversation) error
	// Get returns a conversation's record, or an error wrapping ErrNotFound.
	Get(ctx context.Context, id string) (Conversation, error)
	// Messages returns a conversation's messages in order, as stored.
	Messages(ctx context.Context, id string) ([]Message, error)
	// Append adds messages to the end of a conversation, all or none,
	// after checking the writer's claim in the same transaction. Messages
	// holding tool results remove the results kept for the conversation
	// (Keep) in that transaction too.
	Append(ctx context.Context, id string, msgs ...Message) error
	// Claim takes conversation id's claim for h until lease from now, and
	// returns h with Since set. When another holder has it and is alive —
	// its lease runs and, on this host, its process exists — it fails with
	// a *HeldError naming that holder; a dead holder's claim is taken
	// over. Claiming what h holds already renews it.
	Claim(ctx context.Context, id string, h Holder, lease time.Duration) (Holder, error)
	// Renew extends h's claim on id to lease from now; it fails with an
	// error wrapping ErrClaimLost when h no longer holds it. It never takes
	// a claim.
	Renew(ctx context.Context, id string, h Holder, lease time.Duration) error
	// Release gives up h's claim on id; a claim h does not hold is left
	// as it is.
	Release(ctx context.Context, id string, h Holder) error
	// Keep stores finished tool calls' results (ToolResultParts) ahead of
	// their round's message, all or none, checking the claim like Append.
	// It need not wait for the disk (as under Lazy): a crash of the
	// process must not lose them, and the round's Append, synced, removes
	// them. A result kept again for the same call replaces the first.
	Keep(ctx context.Context, id string, results ...Part) error
	// Kept returns the results kept for conversation id and not removed by
	// an Append since, by call id.
	Kept(ctx context.Context, id string) ([]Part, error)
	// List returns the conversations, most recently updated first.
	List(ctx context.Context) ([]Conversation, error)
	// Close releases the store.
	Close() error
}

type lazyKey struct{}

// Lazy returns a context under which an Append need not wait for the disk:
// what it commits survives a crash of the process at once, and a crash of
// the machine once the next Append without Lazy has returned (SQLite syncs
// its log in order). The agent commits the answer that asks for tool calls
// this way — one disk sync per round, for the results, which must be on
// disk before they are sent. A Store may ignore it.
func Lazy(ctx context.Context) context.Context { return context.WithValue(ctx, lazyKey{}, true) }

// IsLazy reports whether ctx carries Lazy.
func IsLazy(ctx context.Context) bool { v, _ := ctx.Value(lazyKey{}).(bool); return v }

// ErrNotFound is wrapped by the error for a conversation that is not in the
// store.
var ErrNotFound = record.ErrNotFound

// ErrDamaged is wrapped by the error for a stored conversation that is not
// what was written: a message whose bytes no longer match their checksum,
// or messages missing from it. The error names the conversation and the
// message; the store never drops or miscounts such a message silently.
var ErrDamaged = errors.New("the store is damaged")
