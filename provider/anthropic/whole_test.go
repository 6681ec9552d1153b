package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// sdkDecodeWhole is how anthropic-sdk-go v2.17.0's Messages.New read an
// answer of 200 that said JSON (its requestconfig's decode: encoding/json's
// Decoder into the **Message it was given): the reference decodeWhole is
// held to. TestTheSDKsReadingIsMessagesNews holds it to Messages.New.
func sdkDecodeWhole(body []byte) (*sdk.Message, error) {
	var res *sdk.Message
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&res); err != nil {
		return nil, fmt.Errorf("error parsing response json: %w", err)
	}
	return res, nil
}

// showSDK is what Complete read of the SDK's msg (each block's type, id,
// name, text, thinking, signature, data and input; the stop reason; the
// usage), in showWhole's form: nil (Complete panicked) is "nil".
func showSDK(msg *sdk.Message) string {
	if msg == nil {
		return "nil"
	}
	var b strings.Builder
	for _, c := range msg.Content {
		fmt.Fprintf(&b, "block %q %q %q %q %q %q %q input %q\n", c.Type, c.ID, c.Name, c.Text, c.Thinking, c.Signature, c.Data, c.Input)
	}
	u := msg.Usage
	fmt.Fprintf(&b, "stop %q usage %d %d %d %d %d", msg.StopReason, u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, u.CacheCreation.Ephemeral1hInputTokens)
	return b.String()
}

// showWhole is m in showSDK's form.
func showWhole(m wholeMessage) string {
	var b strings.Builder
	for _, c := range m.blocks {
		fmt.Fprintf(&b, "block %q %q %q %q %q %q %q input %q\n", c.kind, c.id, c.name, c.text, c.thinking, c.signature, c.data, c.input)
	}
	u := m.usage
	fmt.Fprintf(&b, "stop %q usage %d %d %d %d %d", m.stopReason, u.input, u.output, u.cacheRead, u.cacheWrite, u.cacheWrite1h)
	return b.String()
}

// readBoth is what decodeWhole reads of body and what the SDK read of
// it, each shown (showWhole, showSDK) or as "error: " and its error; of
// a body the SDK read as no message at all (null), the SDK's is the
// error decodeWhole gives it on purpose (errNullAnswer).
func readBoth(body []byte) (got, want string) {
	msg, err := sdkDecodeWhole(body)
	switch {
	case err != nil:
		want = "error: " + err.Error()
	case msg == nil:
		want = "error: " + errNullAnswer.Error()
	default:
		want = showSDK(msg)
	}
	m, err := decodeWhole(body)
	if err != nil {
		return "error: " + err.Error(), want
	}
	return showWhole(m), want
}

// wholeAnswers is the answers in testdata/messages, by file name.
func wholeAnswers(t testing.TB) map[string][]byte {
	files, err := filepath.Glob("testdata/messages/*.json")
	if err != nil || len(files) < 12 {
		t.Fatalf("%d answers in testdata/messages (%v)", len(files), err)
	}
	out := map[string][]byte{}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(file)] = b
	}
	return out
}

// TestAWholeAnswerIsReadAsTheSDKReadsIt reads each answer in
// testdata/messages (text, tool calls with nested input, thinking and
// its signature, redacted thinking, cache usage by lifetime, each stop
// reason, server tools' blocks, a block of a type to come, odd spacing,
// Unicode, members of other types, keys given twice, and bodies that are
// not JSON, are cut off, are empty, null or not an object) with
// decodeWhole and as the SDK read it: every field the wire reads, and the
// error, the same.
func TestAWholeAnswerIsReadAsTheSDKReadsIt(t *testing.T) {
	for name, body := range wholeAnswers(t) {
		t.Run(name, func(t *testing.T) {
			if got, want := readBoth(body); got != want {
				t.Errorf("decodeWhole\n%s\nthe SDK\n%s", got, want)
			}
		})
	}
}

// The answers hold what the wire reads: a comparison of empty messages
// would pass for any decoder.
func TestTheAnswersHoldWhatTheWireReads(t *testing.T) {
	a := wholeAnswers(t)
	for name, want := range map[string][]string{
		"tool-use.json":          {`"tool_use" "toolu_01B7xqTu2w0mK1b2c3d4e5f6" "workspace--read"`, `input "{\"path\":\"docs/README.md\",\"encoding\":null`, `stop "tool_use" usage 1432 188 0 1024 0`},
		"thinking.json":          {`"thinking" "" "" "" "The user wants a.txt.\nLet me check`, `sig=="`},
		"redacted-thinking.json": {`"redacted_thinking" "" "" "" "" "" "EmwKAhgB`},
		"cache-1h.json":          {`stop "end_turn" usage 4 3 90112 12288 8192`},
		"server-tool-use.json":   {`"server_tool_use" "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE" "web_search"`, `input "{\"query\":\"claude shannon birth date\"}"`},
		"unicode.json":           {"🎉 😀", `"toolu_Uni" "wörk"`, `"思考 🧠"`},
		"pretty.json":            {"\"{\\n   \\\"cmd\\\" : [ \\\"ls\\\" , \\\"-la\\\" ] ,\\n   \\\"env\\\" : { }\\n }\""},
		"keys-twice.json":        {`"text" "" "" "first"`, `stop "" usage 1 4 0 0 0`},
		"loose-types.json":       {`"12345"`, `"7" "true"`, `"{\"a\":[1, 2]}" "-1.5"`, `stop "+Inf" usage 120 1900 -9223372036854775808 1 9223372036854775807`},
		"cut.json":               {"error: error parsing response json: unexpected EOF"},
		"null.json":              {"error: " + errNullAnswer.Error()},
		"invalid-utf8.json":      {"raw \xff\xfe bytes and \xed\xa0\x80 cesu", "end\xc3"},
	} {
		m, err := decodeWhole(a[name])
		got := fmt.Sprintf("error: %v", err)
		if err == nil {
			got = showWhole(m)
			if strings.Contains(name, "utf8") {
				got = m.blocks[0].text + m.stopReason
			}
		}
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %s\nhas no %s", name, got, w)
			}
		}
	}
}

// The reference is Messages.New's reading: the answers in
// testdata/messages, served with a JSON Content-Type, are read by
// Messages.New as by sdkDecodeWhole, errors in the same words (and null
// leaves its *Message nil, with no error: the case decodeWhole makes an
// error of, where Complete panicked).
func TestTheSDKsReadingIsMessagesNews(t *testing.T) {
	for name, body := range wholeAnswers(t) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		}))
		client := sdk.NewClient(option.WithAPIKey("k"), option.WithBaseURL(srv.URL), option.WithMaxRetries(0))
		msg, err := client.Messages.New(context.Background(), sdk.MessageNewParams{})
		srv.Close()
		want, wantErr := sdkDecodeWhole(body)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || showSDK(msg) != showSDK(want) {
			t.Errorf("%s: Messages.New %s, %v\nsdkDecodeWhole %s, %v", name, showSDK(msg), err, showSDK(want), wantErr)
		}
		if name == "null.json" && (msg != nil || err != nil) {
			t.Errorf("null: Messages.New %v, %v; want nil, nil", msg, err)
		}
	}
}

// An answer the SDK read — a member of the wrong JSON type (its zero
// value, or for a string field any value's text), a key given twice (the
// first), a read key in other letters (not read), a block or content that
// is not what it should be, numbers past int64's or float64's range, a
// body that is not an object (a message with nothing in it) — is read as
// the SDK read it, not refused as malformed; a body that is not JSON is
// refused in the SDK's words.
func TestAnAnswerOfOddTypesOrKeysIsReadAsTheSDKReadsIt(t *testing.T) {
	for _, body := range oddAnswers {
		if got, want := readBoth([]byte(body)); got != want {
			t.Errorf("%q\n got  %s\n SDK  %s", body, got, want)
		}
	}
}

// oddAnswers are TestAnAnswerOfOddTypesOrKeysIsReadAsTheSDKReadsIt's
// answers (and seeds of the fuzz test).
var oddAnswers = []string{
	// not an object
	`[1]`, `"x"`, `5`, `-0.5`, `true`, `false`, `{}`, `[]`, ` {} and more`, `{}}`, `{"a":}`, ``, ` `, `nul`,
	// content of other types
	`{"content":{}}`, `{"content":"text"}`, `{"content":null}`, `{"content":[]}`, `{"content":5}`,
	`{"content":[null,1,"s",true,[],{}]}`,
	`{"content":[{"type":"text","text":"a"}],"Content":[{"type":"text","text":"b"}]}`,
	`{"content":[{"Type":"text","TEXT":"a"}]}`,
	`{"c\u006fntent":[{"typ\u0065":"te\u0078t","text":"escaped keys"}]}`,
	`{"content":[{"type":"text","text":"a","text":null}]}`,
	`{"content":[{"type":"text","text":null,"text":"late"}]}`,
	// input of every type
	`{"content":[{"type":"tool_use","input":"s"},{"type":"tool_use","input":1.50},{"type":"tool_use","input":[ 1 , {"a" : "]"} ]},{"type":"tool_use","input":true},{"type":"tool_use","input":null},{"type":"tool_use"}]}`,
	`{"content":[{"type":"tool_use","input":{"a":"b"},"input":{"c":"d"}}]}`,
	// strings from other types
	`{"content":[{"type":1,"id":-0,"name":12345678901234567890123,"text":1.0,"thinking":1e2,"signature":-1.25e-7,"data":1E400}],"stop_reason":["a" , "b"]}`,
	`{"content":[{"type":"text","text":-1e400,"data":0.000001,"id":100000000000000000000000.5}]}`,
	// usage
	`{"usage":[]}`, `{"usage":"x"}`, `{"usage":null}`, `{"usage":{"input_tokens":null,"output_tokens":{},"cache_creation":[]}}`,
	`{"usage":{"input_tokens":20500000000000000000,"output_tokens":"-7.9","cache_read_input_tokens":"12x","cache_creation_input_tokens":9007199254740993,"cache_creation":{"ephemeral_1h_input_tokens":-2.9}}}`,
	`{"usage":{"input_tokens":"99999999999999999999","output_tokens":"-99999999999999999999","cache_read_input_tokens":"0x10","cache_creation_input_tokens":"inf","cache_creation":{"ephemeral_1h_input_tokens":"1_000"}}}`,
	`{"usage":{"input_tokens":false,"output_tokens":"true","cache_read_input_tokens":" 5","cache_creation_input_tokens":"+5","cache_creation":{"ephemeral_1h_input_tokens":"NaN"}}}`,
	`{"usage":{"input_tokens":18446744073709551616,"output_tokens":-9223372036854775809,"cache_read_input_tokens":36893488147419103232,"cache_creation_input_tokens":9223372036854775807,"cache_creation":{"ephemeral_1h_input_tokens":"-9223372036854775808"}}}`,
	// text
	"{\"content\":[{\"type\":\"text\",\"text\":\"a\\ud800b \xff \\udc00x \\ud83d\\ude00\"}]}",
	// white space, and quotes and brackets inside strings, everywhere
	"\t{ \"x\" : [ \"a\\\\\\\"]\" , { \"y\" : \"}\" } , -1.5e3 , true ] ,\r\n \"content\" : [ { \"type\" : \"text\" , \"text\" : \"q\\\\\" , \"input\" : { \"a\" : \"\\\"]}\" } } , null ] , \"stop_reason\" : \"end_turn\" , \"usage\" : { \"input_tokens\" : 3 , \"output_tokens\":2} }\n",
}

// A body of more brackets than decodeWhole checks itself (deeper, or
// not, than encoding/json's limit of nesting) is checked and read by
// encoding/json's Decoder, as the SDK's was: the deep one refused in its
// words, the other read.
func TestABodyOfManyBracketsIsCheckedByEncodingJSON(t *testing.T) {
	deep := strings.Repeat("[", maxWholeBrackets+1) + strings.Repeat("]", maxWholeBrackets+1)
	wide := strings.Repeat("{},", maxWholeBrackets)
	for _, body := range []string{
		`{"content":[{"type":"tool_use","input":` + deep + `}]}`,
		`{"content":[{"type":"tool_use","id":"x","input":[` + wide + `[]]}],"stop_reason":"tool_use"}`,
		`{"content":[{"type":"text","text":"` + strings.Repeat("{[", maxWholeBrackets) + `"}]}`,
	} {
		got, want := readBoth([]byte(body))
		if got != want {
			t.Errorf("%.60s...\n got  %.300s\n SDK  %.300s", body, got, want)
		}
		if strings.HasPrefix(body, `{"content":[{"type":"tool_use","input":[[`) && !strings.HasSuffix(got, "exceeded max depth") {
			t.Errorf("%.60s...: %.300s", body, got)
		}
	}
}

// A body of null is an error: the SDK's decoder left Messages.New's
// *Message nil and no error, and Complete panicked reading it.
func TestANullAnswerIsAnError(t *testing.T) {
	for _, body := range []string{"null", " null ", "null{", "null\n{\"content\":[]}"} {
		if _, err := decodeWhole([]byte(body)); !errors.Is(err, errNullAnswer) {
			t.Errorf("%q: %v, want %v", body, err, errNullAnswer)
		}
		if msg, err := sdkDecodeWhole([]byte(body)); msg != nil || err != nil {
			t.Errorf("%q: the SDK read %v, %v", body, msg, err)
		}
	}
}

// A lone escaped surrogate before another escape is U+FFFD and then that
// escape's character, as the wire reads every string (jsonstring) — the
// one reading of a whole answer that is not the SDK's: gjson took the
// two escapes for a pair and dropped the second.
func TestALoneSurrogateKeepsTheEscapeAfterIt(t *testing.T) {
	for _, tc := range []struct{ text, got, sdk string }{
		{`\ud800\u0041`, "\uFFFDA", "\uFFFD"},
		{`\udc00\u0041`, "\uFFFDA", "\uFFFD"},
		{`\ud800\ud800\udc00`, "\uFFFD\U00010000", "\uFFFD\uFFFD"},
	} {
		body := []byte(`{"content":[{"type":"text","text":"` + tc.text + `"}]}`)
		m, err := decodeWhole(body)
		if err != nil || m.blocks[0].text != tc.got {
			t.Errorf("%s: %q, %v; want %q", tc.text, m.blocks, err, tc.got)
		}
		msg, err := sdkDecodeWhole(body)
		if err != nil || msg.Content[0].Text != tc.sdk {
			t.Errorf("%s: the SDK read %q, %v; the test wants %q", tc.text, msg.Content[0].Text, err, tc.sdk)
		}
		if !loneSurrogate.Match(body) {
			t.Errorf("%s: not passed over by the fuzz test", tc.text)
		}
	}
}

// loneSurrogate matches an escaped surrogate followed by another escape
// that does not make a pair with it (TestALoneSurrogateKeepsTheEscapeAfterIt).
var loneSurrogate = regexp.MustCompile(`(?i)\\ud[89ab][0-9a-f]{2}\\u(?:[0-9a-ce-f]|d[0-9ab])|\\ud[c-f][0-9a-f]{2}\\u`)

// FuzzAWholeAnswerIsReadAsTheSDKReadsIt holds what decodeWhole reads of
// any bytes to what the SDK read of them (sdkDecodeWhole): every field
// the wire reads the same, or the same error (null, which the SDK read as
// no message, being errNullAnswer). Only a body with a lone escaped
// surrogate before another escape is passed over
// (TestALoneSurrogateKeepsTheEscapeAfterIt names the difference). Run:
//
//	go test -run '^$' -fuzz FuzzAWholeAnswer -fuzztime 3m ./provider/anthropic/
func FuzzAWholeAnswerIsReadAsTheSDKReadsIt(f *testing.F) {
	for _, body := range wholeAnswers(f) {
		f.Add(body)
	}
	for _, body := range oddAnswers {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var unchecked wholeMessage
		_ = unchecked.UnmarshalJSON(body) // JSON or not: no panic, no end
		if loneSurrogate.Match(body) {
			return
		}
		if got, want := readBoth(body); got != want {
			t.Fatalf("%q\ndecodeWhole\n%s\nthe SDK\n%s", body, got, want)
		}
	})
}

// BenchmarkDecodeWhole reads a whole answer with ten tool calls and
// thinking (and one of 64 KiB of text) with decodeWhole and as the SDK
// read it (sdkDecodeWhole), side by side. Run:
//
//	go test ./provider/anthropic -run '^$' -bench DecodeWhole -benchmem -count 3
func BenchmarkDecodeWhole(b *testing.B) {
	var calls strings.Builder
	for i := range 10 {
		fmt.Fprintf(&calls, `,{"type":"tool_use","id":"toolu_01A09q90qw90lq91783%d","name":"workspace--read","input":{"path":"src/file%d.go","range":{"start":1,"end":200}}}`, i, i)
	}
	usage := `"usage":{"input_tokens":1200,"cache_creation_input_tokens":1024,"cache_read_input_tokens":4096,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":1024},"output_tokens":210,"service_tier":"standard"}`
	bodies := map[string][]byte{
		"tools": []byte(`{"id":"msg_01B","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"thinking","thinking":"Read the ten files.","signature":"EqQBCkYIBRgCKkA+sig=="},{"type":"text","text":"Reading them."}` + calls.String() + `],"stop_reason":"tool_use","stop_sequence":null,` + usage + `}`),
		"text":  []byte(`{"id":"msg_01T","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"` + strings.Repeat(`line of text \"quoted\"\n`, 64<<10/24) + `"}],"stop_reason":"end_turn","stop_sequence":null,` + usage + `}`),
	}
	for _, name := range []string{"tools", "text"} {
		body := bodies[name]
		b.Run(name+"/wire", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := decodeWhole(body); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/SDK", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := sdkDecodeWhole(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
