package mcpserver

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/approval"
)

// A host of protocol 2026-07-28 or later takes no request from a server
// during a call (SEP-2322, SEP-2575): a question for its user is the
// call's answer instead — a result holding input requests, with a state
// the host sends back — and the host sends the call again with the
// answers. inputs is that exchange for one host's call: what the host
// sent back (its answers and the state), and the question to send it
// when the call could not run without one.
//
// The state binds an answer to the call it was asked about: it is an
// HMAC, under a key of the server's made when it starts, of the tool and
// the call's input. An answer sent back with another call, or to another
// server, is not taken, and the user is asked again. The state is not
// kept: the same call sent again with the same answer runs again, as a
// host that answers for its user may make it do anyway.

// approvalInput is the id of the permission question among a result's
// input requests.
const approvalInput = "approval"

// errInputRequired is what the Asker returns when the question goes back
// to the host as an input request: the call does not run now.
var errInputRequired = errors.New("the question was sent to the MCP host as an input request; the call runs when the host sends it again with the answer")

// inputs is the multi round-trip exchange of one host's call.
type inputs struct {
	key    []byte // the server's key for states
	callID string // the host's call (approval.Request.CallID): only its question goes back

	responses sdk.InputResponseMap // the answers the host sent back
	state     string               // and the state it sent with them

	need      *sdk.ElicitParams // the question the call needs answered
	needState string
}

type inputsKey struct{}

// withInputs is ctx of the host's call whose exchange is in.
func withInputs(ctx context.Context, in *inputs) context.Context {
	return context.WithValue(ctx, inputsKey{}, in)
}

// inputsOf is the exchange of the host's call run under ctx, nil when none.
func inputsOf(ctx context.Context) *inputs {
	in, _ := ctx.Value(inputsKey{}).(*inputs)
	return in
}

// roundTrips reports whether ss's host takes questions as input requests
// (protocol 2026-07-28 and later) rather than as requests of the server.
func roundTrips(ss *sdk.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.ProtocolVersion >= "2026-07-28"
}

// answer is the host's answer to the question r, when it sent one back
// with the state of that question; nil when it did not.
func (in *inputs) answer(r approval.Request) *sdk.ElicitResult {
	if in.state == "" || in.responses == nil {
		return nil
	}
	if !hmac.Equal([]byte(in.state), []byte(in.stateFor(r))) {
		return nil
	}
	res, _ := in.responses[approvalInput].(*sdk.ElicitResult)
	return res
}

// ask records the question r needs answered, params.
func (in *inputs) ask(r approval.Request, params *sdk.ElicitParams) {
	in.need, in.needState = params, in.stateFor(r)
}

// stateFor is the state of the question about r's call.
func (in *inputs) stateFor(r approval.Request) string {
	var input bytes.Buffer
	if json.Compact(&input, r.Input) != nil {
		input.Reset()
		input.Write(r.Input)
	}
	m := hmac.New(sha256.New, in.key)
	m.Write([]byte(r.Tool))
	m.Write([]byte{0})
	m.Write(input.Bytes())
	return hex.EncodeToString(m.Sum(nil))
}

// inputRequired is the result that sends the question back to the host.
func (in *inputs) inputRequired() *sdk.CallToolResult {
	return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{approvalInput: in.need}, RequestState: in.needState}
}
