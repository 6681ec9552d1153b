package main

import (
	"fmt"

	"github.com/myelin-run/myelin/provider/anthropic"
)

// cacheTTLHelp is --cache-ttl's help.
const cacheTTLHelp = "how long the provider's prompt cache keeps the conversation's prefix between requests, `TTL`: 5m (the default) or 1h, which writes the cache at a higher price (2x input rather than 1.25x) and keeps it through a pause of up to an hour; for Claude only (--provider anthropic, bedrock, vertex or google-cloud): the other providers manage their cache themselves"

// claudeWire reports whether the wire name (as wireName gives it) speaks
// the Anthropic Messages API, whose cache breakpoints take a lifetime.
func claudeWire(name string) bool {
	switch name {
	case "anthropic", "bedrock", "vertex", "google-cloud":
		return true
	}
	return false
}

// cacheTTL is the lifetime --cache-ttl asks for on wire (its wireName), or
// a usage error: a value the API does not take, or any value on a wire
// whose provider chooses its cache's lifetime itself (refused rather than
// ignored, so that nobody pays for, or counts on, a lifetime that is not
// sent).
func cacheTTL(value, wire string) (anthropic.CacheTTL, error) {
	if value == "" {
		return "", nil
	}
	ttl, err := anthropic.ParseCacheTTL(value)
	if err != nil {
		return "", fmt.Errorf("--cache-ttl %q: give 5m (the default) or 1h", value)
	}
	if !claudeWire(wire) {
		return "", fmt.Errorf("--cache-ttl %s: the %s wire has no cache lifetime to choose: its provider manages its prompt cache itself; --cache-ttl is for Claude (--provider anthropic, bedrock, vertex or google-cloud)", value, wire)
	}
	return ttl, nil
}
