package anthropic

import "fmt"

// CacheTTL is how long the prompt cache keeps what a request's cache
// breakpoints mark, unread, before it is dropped (Config.CacheTTL): the
// Messages API's cache_control.ttl. The zero value, like CacheTTL5m, is
// the API's default of five minutes and sends no ttl: the marker is
// {"type":"ephemeral"}, byte for byte what it was before the choice
// existed. CacheTTL1h sends {"ttl":"1h","type":"ephemeral"} on every
// breakpoint (the last tool, the system prompt, the rolling ones), which
// Anthropic's API, Bedrock, Vertex AI and the Google Cloud gateway all take
// (on the models they list for it; another model's refusal is the
// provider's error). A one-hour write costs more than a five-minute one
// (history.Usage.CacheWrite1h counts them); a read costs the same.
type CacheTTL string

// The cache lifetimes the API takes.
const (
	CacheTTL5m CacheTTL = "5m"
	CacheTTL1h CacheTTL = "1h"
)

// ParseCacheTTL is the CacheTTL s names ("5m" or "1h"; "" is the
// default, five minutes), or an error saying what it takes.
func ParseCacheTTL(s string) (CacheTTL, error) {
	t := CacheTTL(s)
	if err := t.Check(); err != nil {
		return "", err
	}
	return t, nil
}

// Check fails, saying what is taken, when t is not a lifetime the API
// takes. The error does not name the wire: its caller does.
func (t CacheTTL) Check() error {
	switch t {
	case "", CacheTTL5m, CacheTTL1h:
		return nil
	}
	return fmt.Errorf("the prompt cache's lifetime %q is not one the API takes: use 5m (the default) or 1h", string(t))
}

// long reports whether t asks for the one-hour cache.
func (t CacheTTL) long() bool { return t == CacheTTL1h }

// Stored is t as the agent stores it with a conversation's settings
// (history.Settings.CacheTTL): "1h", or "" for the default five minutes
// however it was asked for, so that saying 5m changes nothing stored.
func (t CacheTTL) Stored() string {
	if t.long() {
		return string(CacheTTL1h)
	}
	return ""
}

// The cache_control member a breakpoint's block ends with, for each
// lifetime, in the messages and in the head (encodeHead); the SDK's
// CacheControlEphemeralParam encodes to the same bytes
// (TestCacheMarksAreTheSDKs).
const (
	cacheMark   = `,"cache_control":{"type":"ephemeral"}`
	cacheMark1h = `,"cache_control":{"ttl":"1h","type":"ephemeral"}`
)

// mark is the cache_control member of a marked block under t.
func (t CacheTTL) mark() string {
	if t.long() {
		return cacheMark1h
	}
	return cacheMark
}

// CacheTTL is the lifetime the wire's cache breakpoints ask for, as stored
// (CacheTTL.Stored): "1h", or "" for the default five minutes. The agent
// stores it with a conversation's settings (provider.CacheLifetime), so
// that a turn sent with another lifetime says so.
func (p *Provider) CacheTTL() string { return p.cfg.CacheTTL.Stored() }
