package providertest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// The frames are what the AWS event stream decoder (the one the SDK's
// bedrock package reads with) takes, checksums and all.
func TestBedrockFramesDecodeWithTheAWSDecoder(t *testing.T) {
	step := Step{Text: "héllo", ToolCalls: []ToolCall{{ID: "toolu_1", Name: "workspace--read", Input: `{"path":"a"}`}}, Input: 3, Output: 4}
	r := bytes.NewReader(BedrockStream(step))
	dec := eventstream.NewDecoder()
	var events []string
	for r.Len() > 0 {
		msg, err := dec.Decode(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		if msg.Headers.Get(":message-type").String() != "event" || msg.Headers.Get(":event-type").String() != "chunk" {
			t.Fatalf("headers %v", msg.Headers)
		}
		var chunk struct{ Bytes string }
		if err := json.Unmarshal(msg.Payload, &chunk); err != nil {
			t.Fatal(err)
		}
		event, err := base64.StdEncoding.DecodeString(chunk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		var ev struct{ Type string }
		json.Unmarshal(event, &ev)
		events = append(events, ev.Type)
	}
	want := "message_start content_block_start content_block_delta content_block_delta content_block_stop content_block_start content_block_delta content_block_stop message_delta message_stop"
	if strings.Join(events, " ") != want {
		t.Fatalf("events %v", events)
	}
	msg, err := dec.Decode(bytes.NewReader(BedrockException("validationException", "Input is too long for requested model.")), nil)
	if err != nil || msg.Headers.Get(":exception-type").String() != "validationException" || !strings.Contains(string(msg.Payload), "Input is too long") {
		t.Fatalf("exception %v %v", msg, err)
	}
}

func TestThePlatformFakesRefuseWhatThePlatformsRefuse(t *testing.T) {
	body := `{"messages":[],"max_tokens":1,"anthropic_version":"x"}`
	for _, tc := range []struct {
		name, wire, path, auth, body string
		status                       int
	}{
		{"bedrock: no signature", "bedrock", "/model/m/invoke", "", body, 403},
		{"bedrock: not InvokeModel", "bedrock", "/v1/messages", "Bearer k", body, 404},
		{"bedrock: the model in the body", "bedrock", "/model/m/invoke", "Bearer k", `{"model":"m","anthropic_version":"x"}`, 400},
		{"bedrock: stream in the body", "bedrock", "/model/m/invoke", "Bearer k", `{"stream":true,"anthropic_version":"x"}`, 400},
		{"bedrock: no anthropic_version", "bedrock", "/model/m/invoke", "Bearer k", `{"messages":[]}`, 400},
		{"bedrock: fine", "bedrock", "/model/m/invoke", "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/bedrock/aws4_request, SignedHeaders=host, Signature=0", body, 200},
		{"vertex: no token", "vertex", "/v1/projects/p/locations/r/publishers/anthropic/models/m:rawPredict", "", body, 401},
		{"vertex: not rawPredict", "vertex", "/v1/messages", "Bearer t", body, 404},
		{"vertex: the model in the body", "vertex", "/v1/projects/p/locations/r/publishers/anthropic/models/m:rawPredict", "Bearer t", `{"model":"m","anthropic_version":"x"}`, 400},
		{"vertex: fine", "vertex", "/v1/projects/p/locations/r/publishers/anthropic/models/m:rawPredict", "Bearer t", body, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := start(t, tc.wire, []Step{{Text: "ok"}})
			req, _ := http.NewRequest(http.MethodPost, srv.URL+tc.path, strings.NewReader(tc.body))
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("%d %s, want %d", resp.StatusCode, got, tc.status)
			}
		})
	}
}
