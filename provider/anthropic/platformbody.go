package anthropic

import (
	"encoding/json"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/myelin-run/myelin/internal/jsonscan"
	"github.com/myelin-run/myelin/provider"
)

// The body a platform with Send receives is written by the wire as the
// SDK's bedrock and vertex middlewares left it: they took the first-party
// body, set "anthropic_version" (appended at its end), on Bedrock moved
// the anthropic-beta header into "anthropic_beta" (appended after it),
// and deleted "model" (and, on Bedrock, "stream"), each a gjson/sjson
// pass over the whole body, the messages first. Here the messages are
// written once as on the first-party wire; "stream" is left out where
// the URL says it; and the head — what follows the messages — is edited
// once per head encoded (headCache keeps it): its "model" member cut, the
// platform's members added at its end. TestThePlatformBodyIsTheSDKsEdit
// and FuzzThePlatformBodyIsTheSDKsEdit hold it to sjson's edits.

// platformForm is how a platform with Send takes the body: the version
// and betas it wants at the end, and whether "stream" stays. It keeps the
// last head it edited. It is safe for concurrent use.
type platformForm struct {
	version     string
	streamInURL bool
	betasInBody bool

	mu     sync.Mutex
	from   []byte // the first-party head last edited: headCache's bytes, never written to
	betas  bool   // whether that edit added betas
	edited []byte // its edit, never written to once stored
}

// head is the first-party head (encodeHead's) as the platform takes it,
// for a request asking for th: from the last edit when head is the very
// bytes it was made from (headCache hands out the same slice while its
// inputs hold), else edited and kept.
func (f *platformForm) head(head []byte, th Thinking) ([]byte, error) {
	betas := f.betasInBody && len(th.betas()) > 0
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.edited != nil && f.betas == betas && len(f.from) == len(head) && len(head) > 0 && &f.from[0] == &head[0] {
		return f.edited, nil
	}
	tail, err := f.tail(th)
	if err != nil {
		return nil, err
	}
	edited, err := editHead(head, tail)
	if err != nil {
		return nil, err
	}
	f.from, f.betas, f.edited = head, betas, edited
	return edited, nil
}

// tail is the members the platform's body ends with, each after a comma:
// anthropic_version, then (BetasInBody) anthropic_beta, in the order and
// encoding of the SDK's sjson.SetBytes calls.
func (f *platformForm) tail(th Thinking) ([]byte, error) {
	var tail []byte
	if f.version != "" {
		v, err := json.Marshal(f.version)
		if err != nil {
			return nil, fmt.Errorf("anthropic: encoding anthropic_version %q: %w", f.version, err)
		}
		tail = append(append(tail, `,"anthropic_version":`...), v...)
	}
	if betas := th.betas(); f.betasInBody && len(betas) > 0 {
		v, err := json.Marshal(betas)
		if err != nil {
			return nil, fmt.Errorf("anthropic: encoding anthropic_beta %q: %w", betas, err)
		}
		tail = append(append(tail, `,"anthropic_beta":`...), v...)
	}
	return tail, nil
}

// editHead is head, a JSON object as encodeHead writes it (compact), with
// its top-level "model" member cut, if it has one, and tail's members
// (each after a comma) added before its closing brace: a new slice.
func editHead(head, tail []byte) ([]byte, error) {
	s := jsonscan.Scanner{B: head}
	from, to := -1, -1
	ok := s.Object(func(key []byte) bool {
		if string(key) != "model" || from >= 0 {
			return s.Skip()
		}
		// the scan is at the value, after `"model":` (the key is
		// plain, so its 7 bytes) and any white space around the colon
		k := s.I
		for k > 0 && isSpace(head[k-1]) {
			k--
		}
		k-- // ':'
		for k > 0 && isSpace(head[k-1]) {
			k--
		}
		from = k - len(`"model"`)
		if !s.Skip() {
			return false
		}
		to = s.I
		return true
	})
	if !ok || !s.AtEnd() {
		return nil, fmt.Errorf("anthropic: the request's head is not a JSON object: %.80q", head)
	}
	if from < 0 {
		// none (the SDK leaves out an empty model): nothing to cut;
		// the platform's Send refuses the request
		from, to = 0, 0
	} else {
		// the member goes with the comma before it, or, first, the one
		// after
		before := from
		for before > 0 && isSpace(head[before-1]) {
			before--
		}
		if head[before-1] == ',' {
			from = before - 1
		} else {
			for to < len(head) && isSpace(head[to]) {
				to++
			}
			if head[to] == ',' {
				to++
			}
		}
	}
	out := make([]byte, 0, len(head)-(to-from)+len(tail))
	out = append(out, head[:from]...)
	out = append(out, head[to:]...)
	if len(tail) == 0 {
		return out, nil
	}
	end := len(out) - 1 // the closing brace
	for end > 0 && isSpace(out[end-1]) {
		end--
	}
	rest := append([]byte(nil), out[end:]...)
	out = out[:end]
	if out[len(out)-1] == '{' {
		out = append(out, tail[1:]...) // no member before: no comma
	} else {
		out = append(out, tail...)
	}
	return append(out, rest...), nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// wireModel is model as the SDK's platform middleware read it back from
// the body the SDK encoded: model itself when it is UTF-8 (the encoding
// gives it back whole), else what its encoding decodes to (each byte that
// is not UTF-8 a U+FFFD).
func wireModel(model string) string {
	if utf8.ValidString(model) {
		return model
	}
	head, err := encodeHead(provider.Request{Model: model}, 0, Thinking{}, "")
	if err != nil {
		return model
	}
	var v struct {
		Model string `json:"model"`
	}
	if json.Unmarshal(head, &v) != nil {
		return model
	}
	return v.Model
}
