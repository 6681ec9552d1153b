// Package mcptest is an MCP server for tests, built with the go-sdk: its
// tools return every content type and every trap myelin's client must get
// through — structured content alone (with an output schema) or with
// text, isError, raw JSON the SDK itself would refuse to send (unknown
// block types, lone surrogate escapes), replies of many MiB, slow calls and a crash in the middle of a
// call, a reply sent on the stream the client resumes after the server
// closed the call's own stream, and a server that ignores the end of its
// stdin and SIGTERM (Stubborn).
//
// It serves in process over HTTP (Handler), or over stdio in a child
// process: a test binary calls ServeIfAsked first thing in TestMain and
// starts itself with Command. It must not be used outside tests.
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// envServe, when set in a test binary's environment, makes ServeIfAsked
// serve MCP on stdin and stdout.
const envServe = "MYELIN_MCPTEST_SERVE"

// envStubborn names the pid file of a stubborn server (see Stubborn);
// envMute makes it never answer.
const (
	envStubborn = "MYELIN_MCPTEST_STUBBORN"
	envMute     = "MYELIN_MCPTEST_MUTE"
)

// EnvIgnoreToolsList, set to any value in the stdio server's environment,
// makes it answer initialize but never tools/list.
const EnvIgnoreToolsList = "MYELIN_MCPTEST_IGNORE_TOOLS_LIST"

// PNG is the image the `every` tool returns: a 1×1 PNG.
var PNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa7\x35\x81\x84\x00\x00\x00\x00IEND\xaeB`\x82")

// WAV is the audio the `every` tool returns.
var WAV = []byte("RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x40\x1f\x00\x00\x80\x3e\x00\x00\x02\x00\x10\x00data\x00\x00\x00\x00")

// Blob is the embedded binary resource the `every` tool returns.
var Blob = []byte{0, 1, 2, 3, 0xff, 0xfe}

// rawPrefix marks a text that the server's connection sends as the raw
// result JSON in its place.
const rawPrefix = "\x00mcptest-raw:"

// NewServer is the test server with all its tools.
func NewServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "mcptest", Version: "1"}, nil)
	// addOut adds a tool; out, when not nil, is its output schema.
	addOut := func(name, desc string, props, out map[string]any, h func(ctx context.Context, in map[string]any) *sdk.CallToolResult) {
		schema := map[string]any{"type": "object", "properties": props}
		t := &sdk.Tool{Name: name, Description: desc, InputSchema: schema}
		if out != nil {
			t.OutputSchema = out
		}
		s.AddTool(t, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			in := map[string]any{}
			if len(req.Params.Arguments) > 0 {
				if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
					return nil, err
				}
			}
			return h(ctx, in), nil
		})
	}
	add := func(name, desc string, props map[string]any, h func(ctx context.Context, in map[string]any) *sdk.CallToolResult) {
		addOut(name, desc, props, nil, h)
	}
	str := map[string]any{"type": "string"}
	num := map[string]any{"type": "number"}
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	add("echo", "Returns its text.", map[string]any{"text": str}, func(_ context.Context, in map[string]any) *sdk.CallToolResult {
		return text(fmt.Sprint(in["text"]))
	})
	add("every", "Returns a block of every content type.", nil, func(context.Context, map[string]any) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.TextContent{Text: "every type:"},
			&sdk.ImageContent{MIMEType: "image/png", Data: PNG},
			&sdk.AudioContent{MIMEType: "audio/wav", Data: WAV},
			&sdk.ResourceLink{URI: "file:///docs/readme.md", Name: "readme", MIMEType: "text/markdown"},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///notes.txt", MIMEType: "text/plain", Text: "the notes"}},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///data.bin", MIMEType: "application/octet-stream", Blob: Blob}},
		}}
	})
	// structured has an output schema, which its result fits;
	// structured_text has none.
	counted := map[string]any{"type": "object", "required": []any{"count"}, "properties": map[string]any{
		"count": map[string]any{"type": "integer"}, "items": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}}
	addOut("structured", "Returns structured content and no text.", nil, counted, func(context.Context, map[string]any) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{}, StructuredContent: map[string]any{"count": 2, "items": []string{"a", "b"}}}
	})
	add("structured_text", "Returns structured content and its own text.", nil, func(context.Context, map[string]any) *sdk.CallToolResult {
		r := text("two items")
		r.StructuredContent = map[string]any{"count": 2}
		return r
	})
	add("fail", "Returns an error result.", nil, func(context.Context, map[string]any) *sdk.CallToolResult {
		r := text("it went wrong: no such thing")
		r.IsError = true
		return r
	})
	add("raw", "Sends its json argument as the raw result.", map[string]any{"json": str}, func(_ context.Context, in map[string]any) *sdk.CallToolResult {
		return text(rawPrefix + fmt.Sprint(in["json"]))
	})
	add("big", "Returns a text of mib MiB, in lines of 64 bytes.", map[string]any{"mib": num}, func(_ context.Context, in map[string]any) *sdk.CallToolResult {
		mib, _ := in["mib"].(float64)
		line := strings.Repeat("x", 63) + "\n"
		return text(strings.Repeat(line, int(mib*(1<<20))/len(line)))
	})
	// resumed closes the call's SSE stream after its priming event (the
	// event with an id and no data, which the SDK's server sends when it has
	// an event store) and answers on the stream the client resumes with GET
	// and Last-Event-ID: the SDK's server keeps the reply in its event store
	// and replays it there. Over a JSON reply (no stream) it just answers.
	s.AddTool(&sdk.Tool{Name: "resumed", Description: "Closes the call's stream and answers on the resumed one: its text, or mib MiB of lines.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"text": str, "mib": num}}},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var in struct {
				Text string
				MiB  float64
			}
			if len(req.Params.Arguments) > 0 {
				if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
					return nil, err
				}
			}
			if req.Extra != nil && req.Extra.CloseSSEStream != nil {
				req.Extra.CloseSSEStream(sdk.CloseSSEStreamArgs{RetryAfter: 10 * time.Millisecond})
			}
			if in.MiB > 0 {
				line := strings.Repeat("x", 63) + "\n"
				in.Text = strings.Repeat(line, int(in.MiB*(1<<20))/len(line))
			}
			return text(in.Text), nil
		})
	add("slow", "Answers after ms milliseconds, unless cancelled; creates the file mark, if given, when the call starts.", map[string]any{"ms": num, "mark": str}, func(ctx context.Context, in map[string]any) *sdk.CallToolResult {
		ms, _ := in["ms"].(float64)
		if mark, ok := in["mark"].(string); ok && mark != "" {
			if err := os.WriteFile(mark, []byte("started\n"), 0o644); err != nil {
				return text("mark: " + err.Error())
			}
		}
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
			return text("done")
		case <-ctx.Done():
			return text("cancelled")
		}
	})
	add("crash", "Exits the server in the middle of the call.", nil, func(context.Context, map[string]any) *sdk.CallToolResult {
		fmt.Fprintln(os.Stderr, "mcptest: crashing as asked")
		os.Exit(3)
		return nil
	})
	add("stopcrash", "Stops its parent (SIGSTOP, where there is one), then exits the server in the middle of the call.", nil, func(context.Context, map[string]any) *sdk.CallToolResult {
		fmt.Fprintln(os.Stderr, "mcptest: stopping my parent and crashing as asked")
		stopParent()
		os.Exit(3)
		return nil
	})
	add("pid", "Returns the server's process id.", nil, func(context.Context, map[string]any) *sdk.CallToolResult {
		return text(fmt.Sprint(os.Getpid()))
	})
	add("env", "Returns the server's environment, a variable a line.", nil, func(context.Context, map[string]any) *sdk.CallToolResult {
		return text(strings.Join(os.Environ(), "\n"))
	})
	add("cwd", "Returns the server's working directory.", nil, func(context.Context, map[string]any) *sdk.CallToolResult {
		dir, err := os.Getwd()
		if err != nil {
			return text("getwd: " + err.Error())
		}
		return text(dir)
	})
	return s
}

// Handler serves the test server over streamable HTTP, in process; its
// replies are SSE streams, or JSON bodies when jsonResponse is set. It
// keeps the events of its streams in memory, so a client can resume a
// stream the server closed (Last-Event-ID); every SSE reply therefore
// starts with a priming event, an id and no data.
func Handler(jsonResponse bool) http.Handler {
	s := NewServer()
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{
		JSONResponse: jsonResponse,
		EventStore:   sdk.NewMemoryEventStore(nil),
	})
}

// ServeIfAsked serves the test server on stdin and stdout and exits, when
// the process was started by Command; otherwise it returns at once.
func ServeIfAsked() {
	if os.Getenv(envServe) == "" {
		return
	}
	fmt.Fprintln(os.Stderr, "mcptest: serving on stdio")
	pidFile := os.Getenv(envStubborn)
	if pidFile != "" {
		beStubborn(pidFile)
		if os.Getenv(envMute) != "" {
			select {} // never answers, never exits by itself
		}
	}
	// Servers that print a banner or a log line on stdout are common; a
	// client must skip such lines, not fail.
	fmt.Println("mcptest: a banner on stdout")
	fmt.Println("[INFO] and a log line in brackets")
	err := NewServer().Run(context.Background(), rawTransport{&sdk.StdioTransport{}})
	if pidFile != "" {
		fmt.Fprintln(os.Stderr, "mcptest: stdin ended, and a stubborn server stays:", err)
		select {}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcptest:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Stubborn is the environment, to add to Command's, that makes the stdio
// test server one a client cannot stop politely: it ignores SIGTERM,
// SIGINT and SIGHUP and the end of its stdin, starts a child of its own
// (`sleep 600`) that stays in its process group, and writes its pid and
// that child's, a line each, to pidFile before it serves. With mute it
// never answers at all (a client waits on its initialize).
func Stubborn(pidFile string, mute bool) map[string]string {
	env := map[string]string{envStubborn: pidFile}
	if mute {
		env[envMute] = "1"
	}
	return env
}

// beStubborn does what Stubborn says, before the server serves.
func beStubborn(pidFile string) {
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	sleeper := exec.Command("sleep", "600")
	if err := sleeper.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "mcptest: starting its child:", err)
		os.Exit(1)
	}
	tmp := pidFile + ".tmp"
	data := fmt.Sprintf("%d\n%d\n", os.Getpid(), sleeper.Process.Pid)
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil || os.Rename(tmp, pidFile) != nil {
		fmt.Fprintln(os.Stderr, "mcptest: writing the pid file:", err)
		os.Exit(1)
	}
}

// Command is how a test starts its own binary as the stdio test server:
// the command and the environment entry its config needs.
func Command() (command string, env map[string]string) {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return exe, map[string]string{envServe: "1"}
}

// rawTransport sends a result marked by the raw tool as its raw JSON.
type rawTransport struct{ sdk.Transport }

func (t rawTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	return rawConn{c}, err
}

type rawConn struct{ sdk.Connection }

// Read drops tools/list requests when EnvIgnoreToolsList is set.
func (c rawConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/list" && os.Getenv(EnvIgnoreToolsList) != "" {
			continue
		}
		return msg, err
	}
}

func (c rawConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.Error == nil {
		var r struct {
			Content []struct{ Text string } `json:"content"`
		}
		if json.Unmarshal(resp.Result, &r) == nil && len(r.Content) == 1 && strings.HasPrefix(r.Content[0].Text, rawPrefix) {
			resp.Result = json.RawMessage(strings.TrimPrefix(r.Content[0].Text, rawPrefix))
		}
	}
	return c.Connection.Write(ctx, msg)
}
