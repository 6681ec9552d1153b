package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"

	"github.com/myelin-run/myelin/provider"
)

// readBoth is what the SDK read of answer (encoding/json's Decoder into
// its ChatCompletion, then sdkRead) and what the wire reads of it
// (decodeCompletion, accumulator.whole), each as text, stop reason, usage
// and parts, or as its error.
func readBoth(answer string) (got, want string) {
	show := func(r provider.Response) string {
		r = localIDs(r)
		return fmt.Sprintf("%q %q %+v %+v", r.Message.Text(), r.StopReason, *r.Message.Usage, r.Message.Parts)
	}
	var theirs sdk.ChatCompletion
	if err := json.NewDecoder(bytes.NewReader([]byte(answer))).Decode(&theirs); err != nil {
		want = "error: error parsing response json: " + err.Error()
	} else if r, err := sdkRead(&theirs, nil); err != nil {
		want = "error: " + err.Error()
	} else {
		want = show(r)
	}
	c, err := decodeCompletion([]byte(answer))
	a := accumulator{}
	if err == nil {
		err = a.whole(&c)
	}
	if err != nil {
		got = "error: " + err.Error()
	} else {
		got = show(a.response())
	}
	return got, want
}

// An answer the SDK read — a member of the wrong JSON type (its zero
// value), a list content in a choice after the first, a key given twice
// (the first), a read key in other letters (not read), an integer past
// int64's range (its bound) or a number past float64's — is read as the
// SDK read it, not refused as malformed; a body that is not an object is
// refused in the SDK's words.
func TestAnAnswerOfOddTypesOrKeysIsReadAsTheSDKReadIt(t *testing.T) {
	for _, answer := range []string{
		// the review's
		`{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"prompt_tokens_details":[]}}`,
		`{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":[]}`,
		`{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"},{"message":{"content":[1]}}]}`,
		`{"choices":[{"message":{"content":"hi","tool_calls":{}},"finish_reason":"stop"}]}`,
		`{"choices":[{"message":{"content":5},"finish_reason":"stop"}]}`,
		`{"choices":[{"message":{"content":{"text":"x"}},"finish_reason":"stop"}]}`,
		`{"choices":[{"message":"hi","finish_reason":"stop"}]}`,
		`{"choices":[{"message":{"content":"first"},"finish_reason":"stop"}],"choices":[{"message":{"content":"second"},"finish_reason":"stop"}]}`,
		`{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1e30,"completion_tokens":1}}`,
		`{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":-5,"completion_tokens":1}}`,
		// the fuzz test's find
		`{"choices":[{"message":{"content":"","content":"0"}}]}`,
		// bodies that are not an object
		`[1]`, `"x"`, `5`, `-0.5`, `true`, `null`, `{} and more`,
		// arrays with an element that is not an object: dropped whole
		`{"choices":[1]}`, `{"choices":[null]}`, `{"choices":[{"message":{"content":"a"}},"b"]}`,
		`{"choices":[{"message":{"content":"x","tool_calls":[{"id":1,"function":{"name":["a"],"arguments":{"b":1}}},5]},"finish_reason":"stop"}]}`,
		`{"choices":[{"message":{"content":"x","tool_calls":[{"id":1,"function":{"name":["a"],"arguments":{"b":1}}},null]},"finish_reason":"stop"}]}`,
		// keys
		`{"Choices":[{"message":{"content":"hi"}}]}`,
		`{"choices":[{"Message":{"content":"hi"},"finish_reason":"stop"}]}`,
		`{"ch\u006fices":[{"message":{"content":"escaped key"}}]}`,
		`{"choices":[{"message":{"content":null,"content":"late"},"finish_reason":null,"finish_reason":"stop"}]}`,
		// numbers
		`{"choices":[{"message":{"content":12345678901234567890},"finish_reason":1e400}]}`,
		`{"choices":[{"message":{"content":-1.50},"finish_reason":2E3}]}`,
		`{"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":20500000000000000000,"completion_tokens":"-7.9","prompt_tokens_details":{"cached_tokens":"12x"}}}`,
		`{"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":-99999999999999999999,"completion_tokens":true,"prompt_tokens_details":{"cached_tokens":"1e30"}}}`,
		`{"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":9007199254740993,"completion_tokens":"-","prompt_tokens_details":{"cached_tokens":2.9}}}`,
		// text
		"{\"choices\":[{\"message\":{\"content\":\"a\\ud800b \xff\"},\"finish_reason\":\"stop\"}]}",
		` {"choices":[{"message":{"content": [ {"type":"text","text":"spaced"} ] }}]}`,
		// white space, and quotes and brackets inside strings, everywhere
		"\t{ \"x\" : [ \"a\\\\\\\"]\" , { \"y\" : \"}\" } , -1.5e3 , true ] ,\r\n \"choices\" : [ { \"message\" : { \"content\" : \"q\\\\\" , \"tool_calls\" : [ { \"id\" : \"c\\\"1\" , \"function\" : { \"name\" : \"n\" , \"arguments\" : \"{\\\"a\\\":\\\"]\\\"}\" } } , null ] } , \"finish_reason\" : \"stop\" } , null ] , \"usage\" : { \"prompt_tokens\" : 3 , \"completion_tokens\":2} }\n",
		`{"choices":[{"message":{"content":"a","tool_calls":[{"id":"1","function":{"name":"n","arguments":"[\"}\"]"}},[{"id":"x"}]]},"finish_reason":"stop"}]}`,
	} {
		if got, want := readBoth(answer); got != want {
			t.Errorf("%s\n got  %s\n SDK  %s", answer, got, want)
		}
	}
}

// A lone escaped high surrogate before another escape is U+FFFD and then
// that escape's character, as the wire reads every string
// (jsonstring.Text) — the one reading of a whole answer that is not the
// SDK's: gjson took the two escapes for a pair and dropped the second.
func TestALoneSurrogateKeepsTheEscapeAfterIt(t *testing.T) {
	answer := `{"choices":[{"message":{"content":"\ud800\u0041"},"finish_reason":"stop"}]}`
	got, want := readBoth(answer)
	if !strings.HasPrefix(got, "\"\uFFFDA\" ") || !strings.HasPrefix(want, "\"\uFFFD\" ") {
		t.Fatalf("%s\n got  %s\n SDK  %s", answer, got, want)
	}
}

// loneSurrogate matches an escaped high surrogate followed by an escape
// that is not a low one (TestALoneSurrogateKeepsTheEscapeAfterIt).
var loneSurrogate = regexp.MustCompile(`(?i)\\ud[89ab][0-9a-f]{2}\\u(?:[0-9a-ce-f]|d[0-9ab])`)

// A malformed content list of the first choice is the answer's error in
// the words the wire gave it before it decoded answers itself.
func TestAMalformedContentListIsTheAnswersErrorAsBefore(t *testing.T) {
	for _, answer := range []string{
		`{"choices":[{"message":{"content":[{"type":"thinking","thinking":5}]},"finish_reason":"stop"}]}`,
		`{"choices":[{"message":{"content":[1,2]},"finish_reason":"stop"}]}`,
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(answer))
		}))
		body, _ := Body(sampleRequest(), false, false)
		_, wantErr := sdkWhole(sdkClient(provider.Endpoint{APIKey: "k", BaseURL: srv.URL}, nil), body, nil)
		p, _ := New(Config{APIKey: "k", BaseURL: srv.URL, NoStream: true, MaxRetries: -1})
		_, gotErr := p.Complete(context.Background(), sampleRequest(), nil)
		srv.Close()
		if wantErr == nil || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Errorf("%s\n got %v\n SDK %v", answer, gotErr, wantErr)
		}
	}
}
