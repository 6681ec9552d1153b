package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

// maxName is the longest tool name providers take.
const maxName = 64

// ToolRef is a tool as a server names it.
type ToolRef struct{ Server, Tool string }

// ToolNames gives each tool the name it is offered under:
// `<server>--<tool>`, its characters outside [a-zA-Z0-9_-] made `_`, at
// most 64 characters. Names that would be too long, or that two tools would
// share, end in `-` and eight hex digits of a hash of the original names;
// which tool keeps the plain name is decided by sorting, so the result is
// the same whatever order the servers answer in.
func ToolNames(refs []ToolRef) map[ToolRef]string {
	sorted := slices.Clone(refs)
	slices.SortFunc(sorted, func(a, b ToolRef) int {
		if c := strings.Compare(a.Server, b.Server); c != 0 {
			return c
		}
		return strings.Compare(a.Tool, b.Tool)
	})
	out := map[ToolRef]string{}
	taken := map[string]bool{}
	for _, r := range sorted {
		if _, done := out[r]; done {
			continue
		}
		base := safe(r.Server) + "--" + safe(r.Tool)
		name := base
		if len(name) > maxName || taken[name] {
			name = hashed(base, r)
		}
		for n := 2; taken[name]; n++ { // a hash collision: vanishingly rare, still handled
			name = hashed(base, ToolRef{r.Server, r.Tool + strings.Repeat("'", n)})
		}
		taken[name] = true
		out[r] = name
	}
	return out
}

func safe(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, s)
}

func hashed(name string, r ToolRef) string {
	sum := sha256.Sum256([]byte(r.Server + "\x00" + r.Tool))
	suffix := "-" + hex.EncodeToString(sum[:4])
	if len(name) > maxName-len(suffix) {
		name = name[:maxName-len(suffix)]
	}
	return name + suffix
}
