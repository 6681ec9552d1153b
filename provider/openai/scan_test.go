package openai

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/internal/sse"
	"github.com/myelin-run/myelin/provider/providertest"
)

// chunkCases are chunks and near-chunks that decodeChunk must read as
// json.Unmarshal does: the fake's streams (a light round, tool calls,
// usage), then what the API may send that they do not (escapes, nulls,
// members the reader skips, errors), then what it should not (malformed
// JSON, wrong types, keys in another case or given twice).
func chunkCases(t testing.TB) []string {
	var cases []string
	light := providertest.Step{Input: 100, Output: 20, CacheRead: 50}
	for i := range 3 {
		light.ToolCalls = append(light.ToolCalls, providertest.ToolCall{ID: fmt.Sprintf("call_%d", i), Name: "noop", Input: `{"i":1}`})
	}
	for _, step := range []providertest.Step{
		{Text: "hello there", Input: 12, CacheRead: 3, Output: 9},
		light,
		{ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "workspace--read", Input: `{"path":"a <b> \"c\""}`}}},
		{Text: "é 😀 <&>"},
	} {
		r := sse.NewReader(strings.NewReader(providertest.OpenAIStream(step)))
		for r.Next() {
			if d := r.Event().Data; string(d) != "[DONE]" {
				cases = append(cases, string(d))
			}
		}
	}
	return append(cases,
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt","system_fingerprint":null,"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`,
		`{"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":25,"completion_tokens":3,"total_tokens":28,"prompt_tokens_details":{"cached_tokens":7,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}`,
		`{"choices":[{"index":0,"delta":{"content":null,"tool_calls":[{"index":1,"id":"call_x","type":"function","function":{"name":"f","arguments":""}}]},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":\"b\\n\"}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"},{"index":1,"delta":{"content":"two"},"finish_reason":"length"}]}`,
		`{"choices":[{"index":0,"delta":{"content":"line \"one\"\n\ttwo \u003c\u0026\u003e \ud83d\ude00 \/ \b\f\r"}}]}`,
		`{"choices":[{"delta":{"content":"bad \xff\xfe utf-8"}}]}`,
		`{"choices":[{"delta":{"content":"a lone surrogate \ud800 and \udc00x"}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"id":"bad \xff","function":{"name":"\u00e9"}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[]}}]}`, `{"choices":[{"delta":{"tool_calls":null}}]}`, `{"choices":null}`,
		`{"choices":[null]}`, `{"choices":[{"delta":{"tool_calls":[null]}}]}`, `{"choices":[1]}`, `{"choices":{}}`,
		`{"error":{"message":"context_length_exceeded","type":"invalid_request_error","code":null}}`,
		`{"error": "oops" }`, `{"error":null}`, `{"error":1.5e3}`, `{"error":[]}`, `{"error":{"a":tru}}`,
		`{"object":"error","message":"This model's maximum context length is 4096 tokens","type":"BadRequestError","param":null,"code":400}`,
		" \t\r\n{ \"object\" : \"x\" , \"choices\" : [ { \"index\" : 0 , \"delta\" : { \"content\" : \"a\" } } ] } \n",
		`{}`, `null`, `[]`, `"x"`, `1`, ``, ` `,
		`{"Object":"x"}`, `{"CHOICES":[]}`, `{"choices":[{"Index":1}]}`, `{"choices":[{"delta":{"Content":"x"}}]}`, `{"ſhoices":1}`,
		`{"usage":{"Prompt_Tokens":1}}`, `{"usage":{"prompt_tokens_details":{"Cached_tokens":1}}}`, `{"Error":{}}`, `{"errOr":null}`,
		`{"object":"a","object":"b"}`, `{"choices":[{"index":0}],"choices":[{"delta":{}}]}`, `{"usage":{"prompt_tokens":1},"usage":{"completion_tokens":2}}`,
		`{"usage":{"prompt_tokens":1},"usage":null}`, `{"error":{},"error":null}`, `{"choices":[{"finish_reason":"stop","finish_reason":null}]}`,
		`{"choices":[{"index":0,"index":1}]}`, `{"choices":[{"delta":{"content":"a","content":"b"}}]}`,
		`{"usage":{"prompt_tokens":null,"completion_tokens":null,"prompt_tokens_details":null}}`, `{"choices":[{"index":null,"delta":null,"finish_reason":null}]}`,
		`{"choices":[{"index":-0}]}`, `{"choices":[{"index":-7}]}`, `{"choices":[{"index":123456789012345678}]}`,
		`{"choices":[{"index":1234567890123456789}]}`, `{"choices":[{"index":99999999999999999999}]}`,
		`{"choices":[{"index":1.5}]}`, `{"choices":[{"index":1e2}]}`, `{"choices":[{"index":01}]}`, `{"choices":[{"index":"1"}]}`,
		`{"usage":{"prompt_tokens":-}}`, `{"usage":{"prompt_tokens":true}}`, `{"object":1}`, `{"usage":[]}`, `{"usage":"x"}`,
		`{not json`, `{"object":"x"`, `{"object":"x"}x`, `{"object":"x",}`, `{"a":nul}`, `{"choices":[{},]}`, `{"choices":[{}}`,
		`{"a":"\x01"}`, `{"a":"\q"}`, `{"a":"\u12"}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":[1,]}`, `{"a":{"b"}}`,
		`{"choices":[{"delta":{"content":"x\u0000y"}}]}`, "{\"choices\":[{\"delta\":{\"content\":\"tab\there\"}}]}",
		`{"obj\u0065ct":"x","k\u0065y":1}`,
	)
}

// checkChunkLikeEncodingJSON fails t when decodeChunk reads data
// otherwise than json.Unmarshal.
func checkChunkLikeEncodingJSON(t *testing.T, data string) {
	t.Helper()
	providertest.DecodesAsEncodingJSON(t, data, decodeChunk)
}

func TestDecodeChunkReadsAChunkAsEncodingJSONDoes(t *testing.T) {
	for _, c := range chunkCases(t) {
		checkChunkLikeEncodingJSON(t, c)
	}
}

func TestDecodeChunkResetsTheChunkFirst(t *testing.T) {
	c := chunk{Object: "stale", Choices: []choice{{Index: 3}}, Usage: &usage{PromptTokens: 9}, Error: json.RawMessage(`{}`)}
	if err := decodeChunk([]byte(`{"object":"x"}`), &c); err != nil || !reflect.DeepEqual(c, chunk{Object: "x"}) {
		t.Fatalf("err %v, chunk %+v", err, c)
	}
}

// FuzzDecodeChunkIsEncodingJSONs holds the scan to encoding/json on any
// input: the same error or none, the same chunk.
func FuzzDecodeChunkIsEncodingJSONs(f *testing.F) {
	for _, c := range chunkCases(f) {
		f.Add(c)
	}
	f.Fuzz(checkChunkLikeEncodingJSON)
}
