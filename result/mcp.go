package result

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/myelin-run/myelin/internal/jsonstring"
)

// FromMCP reads an MCP `tools/call` result (its JSON: content,
// structuredContent, isError) into a Result, the same way a tool's own
// content blocks are read (contract §4). It is a pure function over the data: it
// opens no session and saves nothing; [Round] does the saving.
//
// Text fields are taken byte for byte from the JSON, escapes decoded, so that
// invalid UTF-8 and surrogates reach the one conversion as the server sent
// them rather than pre-mangled by a JSON decoder. A block of a type it does
// not know becomes an [UnknownBlock]; a payload that is not valid base64 makes
// the result an error naming that block. It fails only when raw is not an
// MCP result at all.
func FromMCP(raw []byte) (Result, error) {
	var msg struct {
		Content           []json.RawMessage `json:"content"`
		StructuredContent json.RawMessage   `json:"structuredContent"`
		IsError           bool              `json:"isError"`
	}
	if err := json.Unmarshal(raw, &msg); err != nil {
		return Result{}, fmt.Errorf("reading an MCP tool result: %w", err)
	}
	r := Result{IsError: msg.IsError, Reply: bytes.Clone(raw[:min(len(raw), ReplyKept)]), ReplySize: len(raw)}
	if len(msg.StructuredContent) > 0 {
		r.Structured = msg.StructuredContent
	}
	blocks := make([]Block, 0, len(msg.Content))
	for i, rawBlock := range msg.Content {
		b, err := mcpBlock(rawBlock)
		if err != nil {
			r.IsError = true
			b = TextBlock{Text: fmt.Sprintf("[content block %d: %v]", i+1, err)}
		}
		blocks = append(blocks, b)
	}
	if len(blocks) > 0 {
		r.Data = blocks
	}
	return r, nil
}

func mcpBlock(raw json.RawMessage) (Block, error) {
	var f map[string]json.RawMessage
	if err := json.Unmarshal(raw, &f); err != nil {
		return UnknownBlock{Raw: raw}, nil
	}
	switch jsonString(f["type"]) {
	case "text":
		return TextBlock{Text: jsonString(f["text"])}, nil
	case "image", "audio":
		mime := jsonString(f["mimeType"])
		data, err := base64Field(f["data"])
		if err != nil {
			return nil, fmt.Errorf("%s (%s) data is not valid base64, so it was lost: %w", jsonString(f["type"]), stubField(mime), err)
		}
		if jsonString(f["type"]) == "image" {
			return ImageBlock{MIMEType: mime, Data: data}, nil
		}
		return AudioBlock{MIMEType: mime, Data: data}, nil
	case "resource":
		var res map[string]json.RawMessage
		if err := json.Unmarshal(f["resource"], &res); err != nil {
			return UnknownBlock{Raw: raw}, nil
		}
		b := ResourceBlock{URI: jsonString(res["uri"]), MIMEType: jsonString(res["mimeType"])}
		if blob, ok := res["blob"]; ok {
			data, err := base64Field(blob)
			if err != nil {
				return nil, fmt.Errorf("resource %s (%s) blob is not valid base64, so it was lost: %w", stubField(b.URI), stubField(b.MIMEType), err)
			}
			b.Blob = data
			return b, nil
		}
		b.Text = jsonString(res["text"])
		return b, nil
	case "resource_link":
		return ResourceLinkBlock{URI: jsonString(f["uri"]), Name: jsonString(f["name"]), MIMEType: jsonString(f["mimeType"])}, nil
	}
	return UnknownBlock{Raw: raw}, nil
}

func base64Field(raw json.RawMessage) ([]byte, error) {
	s := jsonString(raw)
	if data, err := base64.StdEncoding.DecodeString(s); err == nil {
		return data, nil
	}
	return base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
}

// jsonString decodes a JSON string without touching the bytes between its
// escapes (jsonstring.Unquote): invalid UTF-8 stays as sent, for the one
// conversion to repair. An escaped surrogate pair is the character it
// encodes and a lone escaped surrogate is U+FFFD (contract §3). Anything
// but a JSON string is "".
func jsonString(raw json.RawMessage) string {
	s, _ := jsonstring.Unquote(bytes.TrimSpace(raw))
	return s
}
