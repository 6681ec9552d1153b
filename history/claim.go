package history

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/myelin-run/myelin/history/internal/record"
)

// Holder is a writer of a conversation: the process (later also a worker
// or an API request) that holds its claim while it advances it (contract §7:
// one writer at a time). A Holder is made by NewHolder; Token tells two
// holders apart even within one process, and is what a Store compares on
// every append. It must not be shared by two turns that may run at once.
type Holder struct {
	// Token is unique to this holder (random).
	Token string `json:"token"`
	// PID and Host name the process, for the error a second writer gets.
	PID  int    `json:"pid"`
	Host string `json:"host"`
	// Node is where PID means this process: the host's boot and the pid
	// namespace ("" where that cannot be told). A holder whose Node is
	// this process's and whose pid is gone has died: its claim is taken
	// over at once. Two containers with one host name have two Nodes.
	Node string `json:"node,omitempty"`
	// Since is when the claim was taken; set by Store.Claim.
	Since time.Time `json:"since"`
	// Epoch is the claim's fencing number, set by Store.Claim in a store
	// that counts takeovers (Postgres): each holder that takes a
	// conversation's claim gets a larger one than the last, and a write
	// under Writing is refused unless the claim still has this holder's
	// token and epoch. 0 in a store that does not count them (SQLite,
	// Memory compare the token alone).
	Epoch int64 `json:"epoch,omitempty"`
}

// NewHolder returns a new holder for this process: a fresh token, its pid
// and its host name.
func NewHolder() Holder {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return Holder{Token: hex.EncodeToString(b), PID: os.Getpid(), Host: host, Node: node()}
}

// node is thisNode, read once: a process's boot and pid namespace do not
// change while it runs, and a claim is taken once a turn.
var node = sync.OnceValue(record.ThisNode)

// String names the holder for people: "pid 1234 on host, since 09:01:02 UTC".
func (h Holder) String() string {
	s := fmt.Sprintf("pid %d on %s", h.PID, h.Host)
	if !h.Since.IsZero() {
		s += ", since " + h.Since.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	return s
}

// DefaultLease is how long a claim lasts without being renewed. A holder
// renews it well before (the agent every third of it), so only a holder
// that stopped — killed, frozen, cut off — lets it run out.
const DefaultLease = 30 * time.Second

// HeldError is the error for a conversation whose claim another holder has
// and, as far as the store can tell, is alive: its lease runs, and on this
// host its process exists.
type HeldError struct {
	Conversation string
	Holder       Holder
	// Expires is when the claim runs out unless its holder renews it.
	Expires time.Time
}

// Error names the conversation and its holder.
func (e *HeldError) Error() string {
	return fmt.Sprintf("conversation %s is being advanced by another writer: %s", e.Conversation, e.Holder)
}

// ErrClaimLost is wrapped by the error for a write by a holder whose claim
// was taken over (or released): nothing was written.
var ErrClaimLost = record.ErrClaimLost

// ErrExists is wrapped by the error for creating a conversation whose id is
// taken (another process may have created it at the same moment).
var ErrExists = errors.New("a conversation with this id exists already")

type writerKey struct{}

// Writing returns a context under which a Store's Append, Keep and Renew
// write as h: each checks, in its own transaction, that h still holds the
// conversation's claim, and refuses (ErrClaimLost) when it does not.
// Without it a write is allowed only while no live holder claims the
// conversation. It must carry a holder that took the conversation's claim
// (Store.Claim): under any other, every write is refused.
func Writing(ctx context.Context, h Holder) context.Context {
	return context.WithValue(ctx, writerKey{}, h)
}

// Unclaimed returns ctx without the holder Writing gave it: for work done
// under one conversation's claim that writes another conversation — a
// subagent's, made by its parent's tool call — which takes that one's own
// claim (or writes it unclaimed) and must not write as the parent's
// holder, whose claim is on the parent alone.
func Unclaimed(ctx context.Context) context.Context {
	if _, ok := WriterOf(ctx); !ok {
		return ctx
	}
	return context.WithValue(ctx, writerKey{}, nil)
}

// WriterOf returns the holder ctx writes as (see Writing).
func WriterOf(ctx context.Context) (Holder, bool) {
	h, ok := ctx.Value(writerKey{}).(Holder)
	return h, ok
}

// claimRow is a stored claim.
type claimRow struct {
	Holder
	expires time.Time
}

// alive reports whether the claim's holder may still be writing at now: its
// lease runs and, when it is on this node (see Holder.Node), its process
// exists. A holder elsewhere is alive until its lease runs out.
func (c claimRow) alive(now time.Time, node string) bool {
	return record.Alive(now, c.expires, node, c.Node, c.PID)
}

// lost is the error for a write by w when the conversation's claim is c
// (ok false: there is none).
func lost(id string, w Holder, c claimRow, ok bool) error {
	if !ok {
		return record.ClaimLost(id, w.String(), "")
	}
	return record.ClaimLost(id, w.String(), c.Holder.String())
}
