package gemini

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/internal/sse"
	"github.com/myelin-run/myelin/provider/providertest"
)

// chunkCases are the inputs unmarshalChunk is held to json.Unmarshal on
// (and the fuzz target's seeds): every chunk of the recorded answers in
// testdata and of the fake's streams; chunks the API may send and those do
// not hold (escapes, surrogates, bytes not UTF-8, nulls for each field,
// members passed over, prompt feedback, errors); and what it should not
// send (keys in another case or twice, wrong types, numbers too large or
// not integers, malformed JSON).
func chunkCases(t testing.TB) []string {
	var cases []string
	files, err := filepath.Glob(filepath.Join("testdata", "*.sse"))
	if err != nil {
		t.Fatal(err)
	}
	var streams []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, string(b))
	}
	for _, step := range []providertest.Step{
		{Text: "hello there", Input: 12, CacheRead: 3, Output: 9},
		{ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "noop--run", Input: `{}`}, {ID: "call_2", Name: "noop--run", Input: `{}`}}},
		{ToolCalls: []providertest.ToolCall{{Name: "workspace--read", Input: `{"path":"a <b> \"c\""}`}}, GeminiThought: "thinking é 😀"},
	} {
		streams = append(streams, providertest.GeminiStream(step, "c2lnbmF0dXJl"))
	}
	for _, stream := range streams {
		r := sse.NewReader(strings.NewReader(stream))
		for r.Next() {
			cases = append(cases, string(r.Event().Data))
		}
	}
	for _, f := range []string{"answer.json", "error-200.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, string(b))
	}
	return append(cases,
		`{"candidates":[{"content":{"parts":[{"text":"a","thought":false,"thoughtSignature":"","functionCall":null}],"role":"model"},"finishReason":"STOP","index":0,"safetyRatings":[{"category":"x","probability":"NEGLIGIBLE"}]}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":2,"totalTokenCount":12,"promptTokensDetails":[{"modality":"TEXT","tokenCount":10}],"cachedContentTokenCount":4,"thoughtsTokenCount":1}}`,
		`{"candidates":[{"content":{"parts":[{"functionCall":{"id":"x","name":"f","args":null}},{"functionCall":{"args":[1,2]}},{"functionCall":{"args":"s"}},{"functionCall":{"args":{ }}},{"functionCall":{}}]}}]}`,
		`{"candidates":[{"content":{"parts":[{"functionCall":{"args":{"a":{"b":[true,false,null,-1.5e3]}}}}]}}]}`,
		`{"candidates":[{"content":{"parts":[{"text":"line \"one\"\n\ttwo \u003c\u0026\u003e \ud83d\ude00 \/ \b\f\r"}]}}]}`,
		`{"candidates":[{"content":{"parts":[{"text":"bad \xff\xfe utf-8","thoughtSignature":"bad \xff"}]}}]}`,
		`{"candidates":[{"content":{"parts":[{"text":"a surrogate in UTF-8 form \xed\xa0\xbd\xed\xb8\x80"}]}}]}`,
		`{"candidates":[{"content":{"parts":[{"text":"a lone surrogate \ud800 and \udc00x"}]}}]}`,
		`{"candidates":[{"content":{"parts":[{"functionCall":{"id":"\u00e9","name":"bad \xff"}}]}}]}`,
		`{"candidates":[{"finishReason":"MAX_TOKENS"}],"usageMetadata":null}`,
		`{"candidates":[{"content":null,"finishReason":null}]}`, `{"candidates":[{"content":{"parts":null}}]}`,
		`{"candidates":[{"content":{"parts":[]}}]}`, `{"candidates":[]}`, `{"candidates":null}`, `{"candidates":[null]}`,
		`{"candidates":[{"content":{"parts":[null]}}]}`, `{"candidates":[1]}`, `{"candidates":{}}`, `{"candidates":[{"content":[]}]}`,
		`{"candidates":[{"content":{"parts":[{"text":null,"thought":null,"thoughtSignature":null}]}}]}`,
		`{"candidates":[{"content":{"parts":[{"thought":true}]}}]}`, `{"candidates":[{"content":{"parts":[{"thought":1}]}}]}`,
		`{"candidates":[{"content":{"parts":[{"thought":"true"}]}}]}`, `{"candidates":[{"content":{"parts":[{"thought":tru}]}}]}`,
		`{"candidates":[{"content":{"parts":[{"thought":truex}]}}]}`, `{"candidates":[{"content":{"parts":[{"thought":falsey}]}}]}`,
		`{"candidates":[{"content":{"parts":[{"text":1}]}}]}`, `{"candidates":[{"content":{"parts":[{"text":["a"]}]}}]}`,
		`{"promptFeedback":{"blockReason":"SAFETY","blockReasonMessage":"no"}}`, `{"promptFeedback":null}`, `{"promptFeedback":1}`,
		`{"error":{"code":400,"message":"The input token count (5) exceeds the maximum number of tokens allowed (4).","status":"INVALID_ARGUMENT"}}`,
		`{"error":null}`, `{"error":"oops"}`, `{"error":{"code":"x"}}`, `{"error":{"details":[{"@type":"t"}]}}`,
		`{"usageMetadata":{"promptTokenCount":null,"candidatesTokenCount":-0,"thoughtsTokenCount":-7}}`,
		`{"usageMetadata":{"promptTokenCount":123456789012345678}}`, `{"usageMetadata":{"promptTokenCount":1234567890123456789}}`,
		`{"usageMetadata":{"promptTokenCount":99999999999999999999}}`, `{"usageMetadata":{"promptTokenCount":1.5}}`,
		`{"usageMetadata":{"promptTokenCount":1e2}}`, `{"usageMetadata":{"promptTokenCount":01}}`, `{"usageMetadata":{"promptTokenCount":"1"}}`,
		`{"usageMetadata":{"promptTokenCount":-}}`, `{"usageMetadata":{"promptTokenCount":true}}`, `{"usageMetadata":[]}`, `{"usageMetadata":"x"}`,
		" \t\r\n{ \"candidates\" : [ { \"content\" : { \"parts\" : [ { \"text\" : \"a\" , \"thought\" : true } ] } , \"finishReason\" : \"STOP\" } ] } \n",
		`{}`, `null`, `[]`, `"x"`, `1`, ``, ` `,
		`{"Candidates":[]}`, `{"CANDIDATES":null}`, `{"candidates":[{"Content":null}]}`, `{"candidates":[{"content":{"Parts":[]}}]}`,
		`{"candidates":[{"content":{"parts":[{"Text":"x"}]}}]}`, `{"candidates":[{"content":{"parts":[{"functionCall":{"ID":"x"}}]}}]}`,
		`{"usageMetadata":{"PromptTokenCount":1}}`, `{"Error":{}}`, `{"errOr":null}`, `{"ſandidates":1}`, `{"usagemetadata":{}}`,
		`{"candidates":[],"candidates":[{}]}`, `{"usageMetadata":{"promptTokenCount":1},"usageMetadata":{"candidatesTokenCount":2}}`,
		`{"candidates":[{"finishReason":"STOP","finishReason":null}]}`, `{"candidates":[{"content":{"parts":[{"text":"a","text":"b"}]}}]}`,
		`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"a"},"functionCall":{"id":"b"}}]}}]}`,
		`{"candidates":[{"content":{"parts":[{"functionCall":{"args":{},"args":null}}]}}]}`,
		`{"candidates":[{"content":{"parts":[{"thought":true,"thought":false}]}}]}`,
		`{not json`, `{"candidates":[]`, `{"candidates":[]}x`, `{"candidates":[],}`, `{"a":nul}`, `{"candidates":[{},]}`,
		`{"candidates":[{}}`, `{"a":"\x01"}`, `{"a":"\q"}`, `{"a":"\u12"}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":[1,]}`, `{"a":{"b"}}`,
		`{"candidates":[{"content":{"parts":[{"functionCall":{"args":{"a":}}}]}}]}`,
		`{"candidates":[{"content":{"parts":[{"text":"x\u0000y"}]}}]}`, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"tab\there\"}]}}]}",
		`{"c\u0061ndidates":[{"content":{}}],"k\u0065y":1}`,
	)
}

// checkChunkLikeEncodingJSON fails t when unmarshalChunk reads data
// otherwise than json.Unmarshal.
func checkChunkLikeEncodingJSON(t *testing.T, data string) {
	t.Helper()
	providertest.DecodesAsEncodingJSON(t, data, unmarshalChunk)
}

// dump shows a chunk whole, pointers followed.
func dump(c chunk) string {
	b, err := json.Marshal(c)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func TestUnmarshalChunkReadsAChunkAsEncodingJSONDoes(t *testing.T) {
	for _, c := range chunkCases(t) {
		checkChunkLikeEncodingJSON(t, c)
	}
}

func TestUnmarshalChunkResetsTheChunkFirst(t *testing.T) {
	c := chunk{Candidates: []candidate{{FinishReason: "STOP"}}, UsageMetadata: &usage{PromptTokenCount: 9},
		PromptFeedback: &promptFeedback{BlockReason: "x"}}
	want := chunk{Candidates: []candidate{{Content: &content{Parts: []part{{Text: "a"}}}}}}
	if err := unmarshalChunk([]byte(`{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}`), &c); err != nil || !reflect.DeepEqual(c, want) {
		t.Fatalf("err %v, chunk %s", err, dump(c))
	}
}

// TestTheScanTakesTheFakesChunksWithoutEncodingJSON pins that the light
// round's chunks are scanned, not handed on: a chunk json.Unmarshal reads
// gives the same chunk by either way, so only a chunk the scan alone
// refuses tells them apart.
func TestTheScanTakesTheFakesChunksWithoutEncodingJSON(t *testing.T) {
	step := providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "noop--run", Input: `{}`}}, Text: "done <&>"}
	r := sse.NewReader(strings.NewReader(providertest.GeminiStream(step, "c2lnbmF0dXJl")))
	n := 0
	for r.Next() {
		data := bytes.Clone(r.Event().Data)
		var c chunk
		s := chunkScan{}
		s.B = data
		if !s.chunk(&c) || !s.AtEnd() {
			t.Errorf("the scan handed %s to encoding/json", data)
		}
		n++
	}
	if n == 0 {
		t.Fatal("the fake's stream had no events")
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
