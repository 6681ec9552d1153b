package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// idScan finds the top-level "id" of a JSON-RPC message fed to it in
// pieces, without keeping the message: it is how a reply too large to read
// still gets answered, with an error for the call it belongs to. Servers put
// the id before or after the result; both are found.
type idScan struct {
	depth     int
	inString  bool
	escaped   bool
	expectKey bool   // at depth 1, the next string is a key
	inKey     bool   // reading a depth-1 key
	key       []byte // the key being read (bounded)
	inValue   bool   // reading the value of a depth-1 key
	isID      bool   // ... and that key is "id"
	value     []byte // the id's bytes (bounded)
	id        []byte // the id found, once found
}

const maxScanned = 128 // longer keys and ids than this are not ids myelin sent

func (s *idScan) feed(p []byte) {
	for _, b := range p {
		s.byte(b)
	}
}

func (s *idScan) byte(b byte) {
	if s.inString {
		switch {
		case s.escaped:
			s.escaped = false
		case b == '\\':
			s.escaped = true
		case b == '"':
			s.inString = false
		}
		if s.inKey {
			if s.inString {
				s.key = bounded(s.key, b)
			} else {
				s.inKey = false
			}
		} else if s.isID && s.depth == 1 {
			s.value = bounded(s.value, b)
		}
		return
	}
	switch b {
	case '"':
		s.inString = true
		if s.depth == 1 && s.expectKey {
			s.inKey, s.expectKey, s.key = true, false, s.key[:0]
			return
		}
	case ':':
		if s.depth == 1 && !s.inValue {
			s.inValue = true
			s.isID = string(s.key) == "id" && s.id == nil
			s.value = s.value[:0]
			return
		}
	case ',', '}':
		if s.depth == 1 && s.inValue {
			if s.isID {
				s.id = bytes.TrimSpace(append([]byte(nil), s.value...))
			}
			s.inValue, s.isID = false, false
			s.expectKey = b == ','
		}
	}
	switch b {
	case '{', '[':
		s.depth++
		if s.depth == 1 {
			s.expectKey = b == '{'
		}
	case '}', ']':
		s.depth--
	}
	if s.isID && s.depth == 1 {
		s.value = bounded(s.value, b)
	}
}

func bounded(buf []byte, b byte) []byte {
	if len(buf) < maxScanned {
		buf = append(buf, b)
	}
	return buf
}

// ID is the id found, if the message had a valid one.
func (s *idScan) ID() (jsonrpc.ID, error) {
	if s.id == nil {
		return jsonrpc.ID{}, fmt.Errorf("it has no top-level id")
	}
	var v any
	if err := json.Unmarshal(s.id, &v); err != nil {
		return jsonrpc.ID{}, fmt.Errorf("its id %q is not JSON: %w", s.id, err)
	}
	return jsonrpc.MakeID(v)
}
