package main

import (
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/telemetry"
	"github.com/myelin-run/myelin/telemetry/otlptest"
)

// A bad OTEL_* value stops the commands that run turns before they start
// anything, as a usage error naming the variable and its value.
func TestABadOTELValueStopsRunChatAndServeNamingIt(t *testing.T) {
	dir := workspaceWith(t, nil)
	srv := fakeAnthropic(t, providertest.Step{Text: "never"})
	for _, env := range []struct{ key, value, endpoint string }{
		{"OTEL_TRACES_EXPORTER", "zipkin", ""},
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "thrift", "http://127.0.0.1:4318"},
	} {
		t.Setenv(env.key, env.value)
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", env.endpoint)
		for _, args := range [][]string{
			{"run", "--workspace", dir, "hi"},
			{"chat", "--workspace", dir},
			{"serve", "--workspace", dir, "--addr", "127.0.0.1:0"},
		} {
			_, errOut, code := cli(t, args...)
			want := env.key + `="` + env.value + `"`
			if code != exitUsage || !strings.Contains(errOut, want) || !strings.Contains(errOut, "myelin "+args[0]+":") {
				t.Errorf("%s=%s, %s: exit %d, stderr %q; want exit 2 naming %s", env.key, env.value, args[0], code, errOut, want)
			}
			if telemetry.On() {
				t.Errorf("%s=%s, %s: telemetry is on after the command failed", env.key, env.value, args[0])
			}
		}
		t.Setenv(env.key, "")
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests were sent; want none", n)
	}
}

// run exports the spans of its turn over OTLP, and they have reached the
// collector when it exits (its telemetry is flushed on the way out); then
// telemetry is off again.
func TestRunExportsItsSpansBeforeItExits(t *testing.T) {
	rcv := otlptest.Start(t)
	rcv.UseHTTP(t)
	dir := workspaceWith(t, map[string]string{"a.txt": "alpha\n"})
	fakeAnthropic(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "workspace--read", Input: `{"path":"a.txt"}`}}},
		providertest.Step{Text: "It says alpha."})
	if _, errOut, code := cli(t, "run", "--workspace", dir, "what does a.txt say?"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var call *otlptest.Span
	for _, s := range rcv.Spans() {
		if s.Name == "execute_tool workspace--read" {
			call = &s
		}
	}
	if call == nil {
		t.Fatalf("the collector had not received the tool call's span when run exited; it had: %v", otlptest.Names(rcv.Spans()))
	}
	if call.Attributes["gen_ai.tool.call.id"] != "toolu_1" || call.Resource["service.name"] != "myelin" {
		t.Errorf("the tool call's span: attributes %v, resource %v; want call id toolu_1, service myelin", call.Attributes, call.Resource)
	}
	if telemetry.On() {
		t.Error("telemetry is still on after run exited")
	}
}
