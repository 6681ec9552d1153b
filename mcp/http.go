package mcp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/telemetry"
)

// httpTransport is the SDK's streamable HTTP client with myelin's headers
// and reply handling underneath, in the HTTP round trip: the POST of a
// tools/call is seen there, and its reply — a JSON body or an SSE stream,
// or the stream the SDK resumes with GET and Last-Event-ID when the server
// closed the POST's — gives up its raw result and is bounded there, so the
// SDK's own session handling (and its retries) stays whole.
func httpTransport(s Server, o *Options) sdk.Transport {
	// telemetry.Transport: each request carries the traceparent of the
	// call's context (its execute_tool span), so an instrumented server
	// joins the turn's trace; nothing when telemetry is off
	rt := &roundTripper{headers: s.Headers, base: telemetry.Transport(http.DefaultTransport), max: o.maxReply()}
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
// result out of it; a longer one is replaced by an error reply. One over
// spoolAt goes to a file as it is read (spool), and when it is the call's
// reply of text its result is read from there (takeSpooled).
func jsonReply(body io.ReadCloser, sl *slot, max int64) ([]byte, error) {
	defer body.Close()
	var sp spool
	defer sp.close()
	n, err := io.Copy(&sp, io.LimitReader(body, max+1))
	if err != nil {
		return nil, err
	}
	if n > max {
		rest, _ := io.Copy(io.Discard, body)
		return jsonrpc.EncodeMessage(tooLarge(sl.id, n+rest, max))
	}
	return rewriteSpooled(&sp, sl)
}

// rewriteSpooled is rewrite for a message held in sp: read from its file
// when it is the call's reply of text, and in memory otherwise.
func rewriteSpooled(sp *spool, sl *slot) ([]byte, error) {
	if sp.spooled() {
		src, err := sp.reader()
		if err != nil {
			return nil, err
		}
		resp, err := takeSpooled(src, sp.size, func(id jsonrpc.ID) *slot {
			if id == sl.id {
				return sl
			}
			return nil
		})
		if err == nil {
			return jsonrpc.EncodeMessage(resp)
		}
	}
	data, err := sp.bytes()
	if err != nil {
		return nil, err
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

// event reads one event (up to its blank line) into out. Its data goes
// to a spool as it is read, a line in pieces, so that a large event is
// held in a file rather than in memory (rewriteSpooled).
func (f *sseFilter) event() error {
	var fields bytes.Buffer // the lines other than data, as they came
	var data spool
	defer data.close()
	hasData, over := false, false
	var size int64
	keep := func(b []byte) error {
		size += int64(len(b))
		if size > f.max {
			over = true
			data.close()
		}
		if over {
			return nil
		}
		_, err := data.Write(b)
		return err
	}
	for {
		chunk, err := f.br.ReadSlice('\n')
		full := !errors.Is(err, bufio.ErrBufferFull)
		if full && err != nil { // the stream ended within the event
			f.out.Write(fields.Bytes())
			if hasData && !over {
				held, berr := data.bytes()
				if berr != nil {
					return berr
				}
				writeData(&f.out, held)
			}
			f.out.Write(chunk)
			return err
		}
		trimmed := bytes.TrimRight(chunk, "\r\n")
		switch {
		case full && len(trimmed) == 0: // the blank line that ends the event
			if !hasData && !over {
				f.out.Write(fields.Bytes())
				f.out.WriteString("\n")
				return nil
			}
			var msg []byte
			if over {
				msg, _ = jsonrpc.EncodeMessage(tooLarge(f.slot.id, size, f.max))
			} else if msg, err = rewriteSpooled(&data, f.slot); err != nil {
				return err
			}
			f.out.Write(fields.Bytes())
			writeData(&f.out, msg)
			f.out.WriteString("\n")
			return nil
		case bytes.HasPrefix(chunk, []byte("data:")):
			if hasData {
				if err := keep([]byte("\n")); err != nil {
					return err
				}
			}
			hasData = true
			v := bytes.TrimPrefix(chunk[len("data:"):], []byte(" "))
			if err := f.dataLine(v, full, keep); err != nil {
				return err
			}
		default:
			if err := f.otherLine(chunk, full, &fields, &size, &over); err != nil {
				return err
			}
		}
	}
}

// dataLine gives keep the value of a data line, v its first piece (full
// when it holds the line's end), and the rest as it is read, without the
// line's end.
func (f *sseFilter) dataLine(v []byte, full bool, keep func([]byte) error) error {
	cr := false // a '\r' that ended the last piece: the line's end, or data
	for {
		if cr && !(full && len(v) == 1 && v[0] == '\n') {
			if err := keep([]byte("\r")); err != nil {
				return err
			}
		}
		cr = false
		if full {
			v = bytes.TrimSuffix(v, []byte("\n"))
			v = bytes.TrimSuffix(v, []byte("\r"))
			return keep(v)
		}
		if n := len(v); n > 0 && v[n-1] == '\r' {
			cr, v = true, v[:n-1]
		}
		if err := keep(v); err != nil {
			return err
		}
		chunk, err := f.br.ReadSlice('\n')
		full = !errors.Is(err, bufio.ErrBufferFull)
		if full && err != nil {
			return err
		}
		v = chunk
	}
}

// otherLine copies a line that is not data (an id, an event name, a
// comment) into fields, counting it toward the bound: such lines are
// small, and one over the bound makes the event over it.
func (f *sseFilter) otherLine(chunk []byte, full bool, fields *bytes.Buffer, size *int64, over *bool) error {
	for {
		*size += int64(len(chunk))
		if *size > f.max+int64(len("data: \r\n")) {
			*over = true
		}
		if !*over {
			fields.Write(chunk)
		}
		if full {
			return nil
		}
		var err error
		chunk, err = f.br.ReadSlice('\n')
		full = !errors.Is(err, bufio.ErrBufferFull)
		if full && err != nil {
			return err
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
