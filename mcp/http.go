package mcp

import (
	"bufio"
	"bytes"
	"io"
	"mime"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpTransport is the SDK's streamable HTTP client with myelin's headers
// and reply handling underneath, in the HTTP round trip: the POST of a
// tools/call is seen there, and its reply — a JSON body or an SSE stream,
// or the stream the SDK resumes with GET and Last-Event-ID when the server
// closed the POST's — gives up its raw result and is bounded there, so the
// SDK's own session handling (and its retries) stays whole.
func httpTransport(s Server, o *Options) sdk.Transport {
	rt := &roundTripper{headers: s.Headers, base: http.DefaultTransport, max: o.maxReply()}
	return &sdk.StreamableClientTransport{
		OAuthHandler: authHandler(s, o),
		Endpoint:     s.URL,
		HTTPClient:   &http.Client{Transport: rt},
		// The standalone stream (a GET) is where a server sends what it
		// starts itself outside a call: tools/list_changed, logging, and
		// requests such as elicitation. A server that offers none answers
		// 405, and the SDK goes on without it.
		MaxEventSize: -1, // the round trip bounds replies
	}
}

type roundTripper struct {
	headers map[string]string
	base    http.RoundTripper
	max     int64
}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range rt.headers {
		req.Header.Set(k, v)
	}
	// The reply to this request is the one the slot waits for when the
	// request is its tools/call: an HTTP reply answers its own request. It
	// is also the one when the request resumes the call's stream: a server
	// may close the POST's stream after a priming event (an id, no data)
	// and send the reply on the stream the SDK reopens with GET and
	// Last-Event-ID, in the call's context (MCP 2025-11-25, "Resumability
	// and Redelivery": a resumed stream replays only its own stream's
	// messages).
	var sl *slot
	switch s := slotFrom(req.Context()); {
	case s == nil:
	case req.Method == http.MethodPost && req.Body != nil:
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		if msg, err := jsonrpc.DecodeMessage(body); err == nil {
			sl = callSlot(req.Context(), msg)
		}
	case req.Method == http.MethodGet && req.Header.Get("Last-Event-ID") != "" && s.id.IsValid():
		sl = s // its id was noted when its tools/call was sent
	}
	resp, err := rt.base.RoundTrip(req)
	if err != nil || sl == nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch media {
	case "application/json":
		body, err := jsonReply(resp.Body, sl, rt.max)
		if err != nil {
			return nil, err
		}
		resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		resp.Header.Del("Content-Length")
	case "text/event-stream":
		resp.Body = &sseFilter{body: resp.Body, br: bufio.NewReaderSize(resp.Body, 64<<10), slot: sl, max: rt.max}
	}
	return resp, nil
}

// jsonReply reads a JSON reply of at most max bytes and takes the raw
// result out of it; a longer one is replaced by an error reply.
func jsonReply(body io.ReadCloser, sl *slot, max int64) ([]byte, error) {
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		n, _ := io.Copy(io.Discard, body)
		return jsonrpc.EncodeMessage(tooLarge(sl.id, int64(len(data))+n, max))
	}
	return rewrite(data, sl), nil
}

// rewrite takes the raw result out of the reply in data, if it is the
// reply sl waits for, and gives the data the SDK reads instead.
func rewrite(data []byte, sl *slot) []byte {
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return data // the SDK says what is wrong with it
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.ID != sl.id {
		return data
	}
	take(sl, resp)
	out, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		return data
	}
	return out
}

// sseFilter passes an SSE stream through an event at a time, taking the
// raw result out of the event that answers sl, and replacing an event whose
// data is over max with an error reply.
type sseFilter struct {
	body io.Closer
	br   *bufio.Reader
	slot *slot
	max  int64
	out  bytes.Buffer
	err  error
}

func (f *sseFilter) Read(p []byte) (int, error) {
	for f.out.Len() == 0 && f.err == nil {
		f.err = f.event()
	}
	if f.out.Len() > 0 {
		return f.out.Read(p)
	}
	return 0, f.err
}

func (f *sseFilter) Close() error { return f.body.Close() }

// event reads one event (up to its blank line) into out.
func (f *sseFilter) event() error {
	var fields bytes.Buffer // the lines other than data, as they came
	var data []byte
	hasData, over := false, false
	var size int64
	for {
		// What is left of the bound, and room for a field's name: a blank
		// line always fits.
		line, n, err := readLine(f.br, max(f.max-size, 0)+int64(len("data: \r\n")), func([]byte) {})
		if n > 0 && line == nil { // a data line over what is left of the bound
			over, size = true, size+n
		}
		trimmed := bytes.TrimRight(line, "\r\n")
		switch {
		case err != nil:
			f.out.Write(fields.Bytes())
			if hasData {
				writeData(&f.out, data)
			}
			f.out.Write(line)
			return err
		case line == nil:
		case len(trimmed) == 0:
			if !hasData && !over {
				f.out.Write(fields.Bytes())
				f.out.WriteString("\n")
				return nil
			}
			if over {
				data, _ = jsonrpc.EncodeMessage(tooLarge(f.slot.id, size, f.max))
			} else {
				data = rewrite(data, f.slot)
			}
			f.out.Write(fields.Bytes())
			writeData(&f.out, data)
			f.out.WriteString("\n")
			return nil
		case bytes.HasPrefix(trimmed, []byte("data:")):
			v := bytes.TrimPrefix(trimmed[len("data:"):], []byte(" "))
			size += int64(len(v))
			if size > f.max {
				over = true
			}
			if !over {
				if hasData {
					data = append(data, '\n')
				}
				data = append(data, v...)
			}
			hasData = true
		default:
			fields.Write(line)
		}
	}
}

func writeData(w *bytes.Buffer, data []byte) {
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		w.WriteString("data: ")
		w.Write(line)
		w.WriteString("\n")
	}
}
