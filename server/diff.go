package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/myelin-run/myelin/history"
)

// RequestDiff says where request N first differs from request Against,
// read in the order the provider reads (and caches) a prompt, and why the
// cached prefix ends there.
type RequestDiff struct {
	N       int `json:"n"`
	Against int `json:"against"`
	// Bytes and AgainstBytes are the two bodies' sizes; CommonBytes how
	// many bytes they share from their first.
	Bytes        int `json:"bytes"`
	AgainstBytes int `json:"against_bytes"`
	CommonBytes  int `json:"common_bytes"`
	// Kind is "same" (the same prompt), "extends" (N holds the whole
	// prompt of Against and adds to it), "changed" (they differ at Path)
	// or "shorter" (N holds less than Against at Path).
	Kind string `json:"kind"`
	// Path is the first difference, e.g. "messages[12].content[0].content";
	// "" when the same.
	Path string `json:"path,omitempty"`
	// Was and Is are the values there in Against and in N, cut to 2,000
	// bytes of JSON each.
	Was json.RawMessage `json:"was,omitempty"`
	Is  json.RawMessage `json:"is,omitempty"`
	// MarkersMoved says that cache markers (cache_control) differ before
	// Path: a rolling breakpoint moving, which the cache expects.
	MarkersMoved bool `json:"markers_moved,omitempty"`
	// Setting is the first setting (a top-level field outside the prompt,
	// e.g. "model") that differs too when the prompt differs at Path; ""
	// when none does. A different model shares no cache.
	Setting string `json:"setting,omitempty"`
	// Why says what the difference means for the provider's cache.
	Why string `json:"why"`
}

// cacheOrder is the top-level fields of a request body, every wire's, in
// the order providers build the prompt whose prefix they cache: the tool
// definitions and the system prompt (or instructions) before the
// conversation. A wire uses some of them; the other fields of a body are
// settings.
var cacheOrder = []string{"tools", "toolConfig", "system", "systemInstruction", "instructions", "messages", "input", "contents"}

// conversationField is the field that holds the conversation, which a
// later request extends.
var conversationField = map[string]bool{"messages": true, "input": true, "contents": true}

func diffRequests(against, n history.SentRequest) RequestDiff {
	d := RequestDiff{N: n.N, Against: against.N, Bytes: len(n.Body), AgainstBytes: len(against.Body),
		CommonBytes: history.CommonPrefix(against.Body, n.Body)}
	var a, b map[string]any
	if err := decodeBody(against.Body, &a); err != nil {
		d.Kind, d.Why = "changed", fmt.Sprintf("request %d is not a JSON object (%v): only the bytes can be compared", against.N, err)
		return d
	}
	if err := decodeBody(n.Body, &b); err != nil {
		d.Kind, d.Why = "changed", fmt.Sprintf("request %d is not a JSON object (%v): only the bytes can be compared", n.N, err)
		return d
	}
	order := cacheOrder
	if n.Wire != "" && against.Wire != "" && n.Wire != against.Wire {
		d.Kind, d.Path = "changed", ""
		d.Why = fmt.Sprintf("request %d went to another wire (%s, not %s): no cache is shared", n.N, n.Wire, against.Wire)
		return d
	}
	var dw differ
	for _, k := range order {
		path, kind := dw.diff(a[k], b[k], k)
		if kind == "" {
			continue
		}
		d.Kind, d.Path = kind, path
		d.Was, d.Is = dw.was, dw.is
		d.MarkersMoved = dw.markers
		d.Why = why(k, kind, path, n, against)
		var sd differ
		if setting, _ := settingDiff(&sd, a, b, order); setting != "" {
			d.Setting = setting
			d.Why += fmt.Sprintf("; but a setting differs too (%s): a different model shares no cache, and on Anthropic a change of thinking settings drops the cached messages", setting)
		}
		return d
	}
	// the prompt is the same: the settings?
	if path, kind := settingDiff(&dw, a, b, order); kind != "" {
		d.Kind, d.Path, d.Setting, d.Was, d.Is, d.MarkersMoved = "changed", path, path, dw.was, dw.is, dw.markers
		d.Why = fmt.Sprintf("the prompt is the same; a setting differs (%s). A different model shares no cache; on Anthropic a change of thinking settings drops the cached messages (the tools and system prompt stay cached)", path)
		return d
	}
	d.Kind, d.MarkersMoved = "same", dw.markers
	d.Why = "the two requests send the same prompt and settings"
	if dw.markers {
		d.Why += "; only cache markers moved"
	}
	return d
}

// settingDiff is the first difference of a and b outside the prompt's
// fields (order), in the order of their names, and its kind; "" when none.
func settingDiff(dw *differ, a, b map[string]any, order []string) (string, string) {
	var rest []string
	for k := range b {
		if !slices.Contains(order, k) {
			rest = append(rest, k)
		}
	}
	for k := range a {
		if _, ok := b[k]; !ok && !slices.Contains(order, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range rest {
		if path, kind := dw.diff(a[k], b[k], k); kind != "" {
			return path, kind
		}
	}
	return "", ""
}

// decodeBody decodes a body that must be one JSON object.
func decodeBody(body []byte, v *map[string]any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if *v == nil {
		return errors.New("it is JSON null")
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("something follows its JSON object")
	}
	return nil
}

func why(field, kind, path string, n, against history.SentRequest) string {
	switch {
	case conversationField[field] && kind == "extends":
		s := fmt.Sprintf("request %d holds the whole prompt of request %d and adds to it from %s: request %d's prompt is a prefix the provider can read from its cache (up to its last cache breakpoint, on wires that mark them)", n.N, against.N, path, against.N)
		return s
	case conversationField[field] && kind == "shorter":
		return fmt.Sprintf("request %d sends less of the conversation than request %d from %s (a summary took the older part's place, contract §12): the cache holds the prompt up to there", n.N, against.N, path)
	case conversationField[field]:
		return fmt.Sprintf("the conversation is sent differently from %s: an earlier message changed in requests — a context edit (results cleared or a summary, contract §12) or a stored message sent otherwise; the cache holds the prompt before it", path)
	case field == "tools":
		return fmt.Sprintf("the tool definitions differ (%s): they come first in the prompt, so nothing of request %d after them is in the cache", path, n.N)
	default:
		return fmt.Sprintf("the %s differs (%s): what comes after it in the prompt is not in the cache", field, path)
	}
}

// differ finds the first difference of two decoded JSON values, cache
// markers (cache_control) aside: it notes that they moved and goes on.
type differ struct {
	markers bool
	was, is json.RawMessage
}

// diff returns the path of the first difference of a and b under path,
// and its kind ("changed", "extends", "shorter"); "" when the same.
func (d *differ) diff(a, b any, path string) (string, string) {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			return d.found(path, "changed", a, b)
		}
		keys := make([]string, 0, len(av)+len(bv))
		for k := range av {
			keys = append(keys, k)
		}
		for k := range bv {
			if _, ok := av[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			if k == "cache_control" {
				if !equalJSON(av[k], bv[k]) {
					d.markers = true
				}
				continue
			}
			if p, kind := d.diff(av[k], bv[k], path+"."+k); kind != "" {
				return p, kind
			}
		}
		return "", ""
	case []any:
		bv, ok := b.([]any)
		if !ok {
			return d.found(path, "changed", a, b)
		}
		for i := range min(len(av), len(bv)) {
			if p, kind := d.diff(av[i], bv[i], path+"["+strconv.Itoa(i)+"]"); kind != "" {
				return p, kind
			}
		}
		switch {
		case len(bv) > len(av):
			return d.found(path+"["+strconv.Itoa(len(av))+"]", "extends", nil, bv[len(av)])
		case len(bv) < len(av):
			return d.found(path+"["+strconv.Itoa(len(bv))+"]", "shorter", av[len(bv)], nil)
		}
		return "", ""
	default:
		if equalJSON(a, b) {
			return "", ""
		}
		return d.found(path, "changed", a, b)
	}
}

func (d *differ) found(path, kind string, a, b any) (string, string) {
	d.was, d.is = clipJSON(a), clipJSON(b)
	return path, kind
}

func equalJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// clipJSON is v as JSON, a JSON string of its first 2,000 bytes when
// longer; nil for nil.
func clipJSON(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	raw, _ := json.Marshal(v)
	if len(raw) <= 2000 {
		return raw
	}
	cut := 2000
	for cut > 0 && !utf8.RuneStart(raw[cut]) {
		cut--
	}
	s, _ := json.Marshal(string(raw[:cut]) + "…")
	return s
}
