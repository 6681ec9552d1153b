package anthropic

// TEMPORARY until the aerror and awhole branches merge: the SDK's code
// under the names they give.

import (
	"encoding/json"
	"fmt"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
)

type Error = sdk.Error

func refusalError(req *http.Request, res *http.Response, body []byte) error {
	sent := *req
	if to := res.Request; to != nil {
		u := *req.URL
		u.Scheme, u.Host, u.Path, u.RawPath = to.URL.Scheme, to.URL.Host, to.URL.Path, to.URL.RawPath
		sent.Method, sent.URL = to.Method, &u
	}
	e := &sdk.Error{Request: &sent, Response: res, StatusCode: res.StatusCode,
		RequestID: res.Header.Get("request-id"), WorkspaceID: res.Header.Get("anthropic-workspace-id")}
	if err := e.UnmarshalJSON(body); err != nil {
		return err
	}
	return e
}

func streamErrorOf(resp *http.Response, data []byte) error {
	aerr := &sdk.Error{}
	if resp != nil {
		sent := *resp
		if resp.Request != nil {
			sent.Request = resp.Request.Clone(resp.Request.Context())
		}
		aerr.Request = sent.Request
		aerr.Response = &sent
		aerr.StatusCode = resp.StatusCode
		aerr.RequestID = resp.Header.Get("request-id")
		aerr.WorkspaceID = resp.Header.Get("anthropic-workspace-id")
	}
	if aerr.UnmarshalJSON(data) != nil {
		return fmt.Errorf("received error while streaming: %s", data)
	}
	return aerr
}

type wholeMessage struct {
	blocks     []wholeBlock
	stopReason string
	usage      struct{ input, output, cacheRead, cacheWrite, cacheWrite1h int64 }
}

type wholeBlock struct {
	kind, id, name, text, thinking, signature, data string
	input                                           []byte
}

func decodeWhole(body []byte) (wholeMessage, error) {
	var msg sdk.Message
	if err := json.Unmarshal(body, &msg); err != nil {
		return wholeMessage{}, err
	}
	var m wholeMessage
	for _, c := range msg.Content {
		m.blocks = append(m.blocks, wholeBlock{kind: c.Type, id: c.ID, name: c.Name, text: c.Text, thinking: c.Thinking, signature: c.Signature, data: c.Data, input: c.Input})
	}
	m.stopReason = string(msg.StopReason)
	u := msg.Usage
	m.usage.input, m.usage.output, m.usage.cacheRead, m.usage.cacheWrite, m.usage.cacheWrite1h = u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, u.CacheCreation.Ephemeral1hInputTokens
	return m, nil
}
