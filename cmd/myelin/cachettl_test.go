package main

import (
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider/providertest"
)

func TestCacheTTLValuesTheAPIWouldNotTakeAreUsageErrors(t *testing.T) {
	dir := workspaceWith(t, nil)
	fakeAnthropic(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--cache-ttl", "30m"}, `--cache-ttl "30m": give 5m (the default) or 1h`},
		{[]string{"--cache-ttl", "1H"}, `--cache-ttl "1H": give 5m (the default) or 1h`},
	} {
		for _, cmd := range []string{"run", "serve"} {
			args := append([]string{cmd, "--workspace", dir}, c.args...)
			if cmd == "run" {
				args = append(args, "hello")
			}
			_, errOut, code := cli(t, args...)
			if code != 2 || !strings.Contains(errOut, c.want) {
				t.Errorf("%s %v: exit %d, stderr %q; want 2 and %q", cmd, c.args, code, errOut, c.want)
			}
		}
	}
	// the wires whose provider keeps its cache as it likes refuse any
	// lifetime, saying so
	t.Setenv("OPENAI_API_KEY", "k")
	t.Setenv("GEMINI_API_KEY", "k")
	for _, wire := range []string{"openai", "openai-responses", "gemini"} {
		for _, ttl := range []string{"5m", "1h"} {
			_, errOut, code := cli(t, "run", "--workspace", dir, "--provider", wire, "--cache-ttl", ttl, "hello")
			if code != 2 || !strings.Contains(errOut, "the "+wire+" wire has no cache lifetime to choose: its provider manages its prompt cache itself") {
				t.Errorf("--provider %s --cache-ttl %s: exit %d, stderr %q; want 2 and a word that the provider manages its cache", wire, ttl, code, errOut)
			}
		}
	}
}

// --cache-ttl 1h reaches every breakpoint of the request; a later turn
// without it is a settings change the notice names.
func TestCacheTTLIsSentAndAChangeIsNoticed(t *testing.T) {
	dir := workspaceWith(t, nil)
	srv := fakeAnthropic(t, providertest.Step{Text: "one", CacheWrite: 40, CacheWrite1h: 40}, providertest.Step{Text: "two"}, providertest.Step{Text: "three"})
	_, errOut, code := cli(t, "run", "--workspace", dir, "--cache-ttl", "1h", "hello")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	body := string(srv.Requests()[0])
	if !strings.Contains(body, `"cache_control":{"ttl":"1h","type":"ephemeral"}`) || strings.Contains(body, `"cache_control":{"type":"ephemeral"}`) {
		t.Fatalf("--cache-ttl 1h sent %s; want every cache_control with ttl 1h", body)
	}
	id := conversationID(t, errOut)
	// the same lifetime: nothing said
	if _, errOut, code = cli(t, "run", "--workspace", dir, "--conversation", id, "--cache-ttl", "1h", "again"); code != 0 || strings.Contains(errOut, "will not be reused") {
		t.Fatalf("the same lifetime: exit %d, stderr %q; want no cache notice", code, errOut)
	}
	_, errOut, code = cli(t, "run", "--workspace", dir, "--conversation", id, "and again")
	if code != 0 || !strings.Contains(errOut, "the cache lifetime was 1h and is now the provider's default (5m on the Anthropic family)") {
		t.Fatalf("back to the default: exit %d, stderr %q; want the notice to name the lifetime's change", code, errOut)
	}
	if body := string(srv.Requests()[2]); strings.Contains(body, `"ttl"`) {
		t.Fatalf("without --cache-ttl the request says a ttl: %s", body)
	}
	// history show names the lifetime where it was stored
	shown, _, code := cli(t, "history", "show", id, "--workspace", dir)
	if code != 0 {
		t.Fatalf("history show: exit %d", code)
	}
	if n := strings.Count(shown, ", cache lifetime 1h]"); n != 1 {
		t.Fatalf("history show names the one-hour lifetime %d times, want once (the first answer's settings):\n%s", n, shown)
	}
}
