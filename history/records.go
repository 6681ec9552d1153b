package history

import (
	"fmt"
	"time"

	"github.com/myelin-run/myelin/result"
)

// This file is what a Store kept outside this package (history/postgres)
// needs to keep the same records as SQLite does, byte for byte and checked
// the same way. It holds no store of its own and must not grow one.

// EncodeMessage is a message's stored bytes: the JSON every Store keeps
// for it (result.JSON), which DecodeMessage reads back. m.Time must be set
// by the store before.
func EncodeMessage(m Message) ([]byte, error) { return result.JSON(m) }

// DecodeMessage reads a message's stored bytes (EncodeMessage).
func DecodeMessage(raw []byte) (Message, error) { return decodeMessage(raw) }

// EncodePart is a kept result's stored bytes (Store.Keep).
func EncodePart(p Part) ([]byte, error) { return result.JSON(p) }

// DecodePart reads a kept result's stored bytes (EncodePart).
func DecodePart(raw []byte) (Part, error) {
	parts, err := decodeParts(append(append([]byte{'['}, raw...), ']'))
	if err == nil && len(parts) != 1 {
		err = fmt.Errorf("want one part, read %d", len(parts))
	}
	if err != nil {
		return Part{}, err
	}
	return parts[0], nil
}

// MessageChecksum is a stored message's checksum (CRC-32C): of its
// conversation, its number from 1 and its stored bytes, so that a message
// read under another number or conversation fails it too.
func MessageChecksum(conversation string, seq int, raw []byte) int64 {
	return messageChecksum(conversation, seq, raw)
}

// RecordChecksum is a conversation record's checksum: of its id, system
// prompt, creation time as stored (TimeFormat) and its link to a parent
// (Conversation.Parent, ParentCall: "" for none, which gives the checksum
// records had before links were kept).
func RecordChecksum(id, system, created, parent, parentCall string) int64 {
	return recordChecksum(id, system, created, parent, parentCall)
}

// UpdatedChecksum is the checksum (CRC-32C) of a conversation's last
// update time, with its id: of the time as stored, TimeFormat in UTC (a
// store that keeps a time, not text, checks TimeFormat of the time it
// reads back). Kept beside the time, written with it by every Append.
func UpdatedChecksum(id, updated string) int64 { return updatedChecksum(id, updated) }

// CheckLink returns the error for a conversation's link to its parent that
// no store may take (Create), saying what is wrong: a ParentCall without a
// Parent, a conversation its own parent. Whether the parent is in the
// store is each store's to check, in Create's transaction; NoParent is its
// error.
func CheckLink(c Conversation) error { return checkLink(c) }

// NoParent is the error (wrapping ErrNotFound) for creating conversation
// id whose parent is not in the store.
func NoParent(id, parent string) error { return noParent(id, parent) }

// TimeFormat is how a store keeps a conversation's times as text.
const TimeFormat = timeFormat

// CheckClaim returns the error for a Claim of conversation id by h for
// lease that no store may take: a lease that is not positive, a holder
// without a token. It says which.
func CheckClaim(id string, h Holder, lease time.Duration) error {
	if err := checkLease(id, lease); err != nil {
		return err
	}
	if h.Token == "" {
		return fmt.Errorf("claiming conversation %s: the holder has no token (make it with NewHolder)", id)
	}
	return nil
}

// CheckKeep returns the error for keeping parts that are not tool results
// with call ids (Store.Keep), saying which.
func CheckKeep(id string, results []Part) error {
	for _, p := range results {
		if p.Type != ToolResultPart || p.CallID == "" {
			return fmt.Errorf("keeping results in conversation %s: want tool results with call ids, got a %q part with call id %q", id, p.Type, p.CallID)
		}
	}
	return nil
}

// ClaimLost is the error (wrapping ErrClaimLost) for a write to
// conversation id by w, whose claim now has holder now (nil: nobody holds
// it, it was released or taken over and released).
func ClaimLost(id string, w Holder, now *Holder) error {
	if now == nil {
		return lost(id, w, claimRow{}, false)
	}
	return lost(id, w, claimRow{Holder: *now}, true)
}

// Gone reports whether h's process is known to have ended: h is on this
// process's Node and its pid no longer exists. A gone holder's claim is
// taken over at once, whatever its lease; a holder elsewhere is never
// known gone (its lease decides).
func (h Holder) Gone() bool {
	node := thisNode()
	return node != "" && h.Node == node && h.PID > 0 && !processExists(h.PID)
}

// NoRequest is the error (wrapping ErrNotFound) for request n of
// conversation id, which has count requests.
func NoRequest(id string, n, count int) error { return errNoRequest(id, n, count) }
