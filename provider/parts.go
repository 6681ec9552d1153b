package provider

import (
	"bytes"
	"unsafe"

	"github.com/myelin-run/myelin/history"
)

// SameParts reports whether the Parts b encode as a do on every wire that
// keeps a conversation's encoded prefix (Anthropic's, the Responses
// API's): the same Parts — a stored message's never change (contract
// §7), so a slice at the same address and of the same length holds the
// same — or Parts with the same value in every field a wire encodes. A
// view's edits build new Parts for a cleared message and a summary on
// every request; their contents are compared, which is cheap (a
// placeholder is short, a summary's text the same string). It is for
// deciding whether encoded bytes can be sent again, nothing else: it
// does not compare what no wire sends.
func SameParts(a, b []history.Part) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || unsafe.SliceData(a) == unsafe.SliceData(b) {
		return true
	}
	for i := range a {
		if !samePart(&a[i], &b[i]) {
			return false
		}
	}
	return true
}

func samePart(a, b *history.Part) bool {
	if a.Type != b.Type || a.Text != b.Text || a.CallID != b.CallID || a.Name != b.Name ||
		a.IsError != b.IsError || a.Wire != b.Wire || !bytes.Equal(a.Input, b.Input) ||
		(a.Input == nil) != (b.Input == nil) || !bytes.Equal(a.Raw, b.Raw) || len(a.Images) != len(b.Images) {
		return false
	}
	for i := range a.Images {
		if a.Images[i].MIMEType != b.Images[i].MIMEType || !bytes.Equal(a.Images[i].Data, b.Images[i].Data) {
			return false
		}
	}
	return true
}
