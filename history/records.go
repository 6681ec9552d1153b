package history

import (
	"fmt"

	"github.com/myelin-run/myelin/result"
)

// This file is a message's stored bytes, the same in every store: what a
// Store written outside this package reads and writes (the checksums and
// checks the module's own stores share are in history/internal/record).
// It holds no store of its own and must not grow one.

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
