package providertest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/myelin-run/myelin/provider"
)

// Sent is one request as it left a client: what a Wiretap recorded.
type Sent struct {
	Method, URL string
	Header      http.Header
	Body        []byte
}

// Wiretap is an http.RoundTripper for a client under test that records
// each request whole — method, URL, headers and body, as they left the
// client — and then sends it on to a fake at To (whatever host the
// request named), or, with no To, answers it in process with a short whole
// Anthropic Messages answer (a streamed request then fails to read: the
// same way for any two clients compared). It is for tests that hold two
// clients to sending the same bytes; it must not be used to reach
// anything but a fake on loopback.
type Wiretap struct {
	To *url.URL

	mu   sync.Mutex
	sent []Sent
}

// Tap is a Wiretap sending on to srv and a client whose requests go
// through it: for a wire that sends to its platform's own address (which
// the tap records) but must reach the fake. It fails t if srv's URL does
// not parse.
func Tap(t testing.TB, srv *Server) (*Wiretap, *http.Client) {
	t.Helper()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatalf("the fake's URL %q: %v", srv.URL, err)
	}
	w := &Wiretap{To: u}
	return w, &http.Client{Transport: w}
}

// wholeAnswer is Wiretap's in-process answer.
const wholeAnswer = `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`

// RoundTrip records r and sends it on, or answers it.
func (w *Wiretap) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		var err error
		body, err = io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	w.mu.Lock()
	w.sent = append(w.sent, Sent{r.Method, r.URL.String(), r.Header.Clone(), body})
	w.mu.Unlock()
	if w.To == nil {
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(wholeAnswer)), Request: r}, nil
	}
	r = r.Clone(r.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.URL.Scheme, r.URL.Host, r.Host = w.To.Scheme, w.To.Host, ""
	return http.DefaultTransport.RoundTrip(r)
}

// Count is how many requests w recorded.
func (w *Wiretap) Count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.sent)
}

// Sent is the i-th request w recorded.
func (w *Wiretap) Sent(i int) Sent {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sent[i]
}

// Reset forgets what w recorded.
func (w *Wiretap) Reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sent = nil
}

// Exchange sends req on each of ps in turn through w and returns what each
// sent (a zero Sent when it sent nothing) and its error's text ("" for
// none): for two clients held to sending the same request, or refusing it
// alike.
func (w *Wiretap) Exchange(req provider.Request, ps ...provider.Provider) (sent []Sent, errs []string) {
	sent, errs = make([]Sent, len(ps)), make([]string, len(ps))
	for i, p := range ps {
		n := w.Count()
		if _, err := p.Complete(context.Background(), req, nil); err != nil {
			errs[i] = err.Error()
		}
		if c := w.Count(); c > n {
			sent[i] = w.Sent(c - 1)
		}
	}
	return sent, errs
}

// CheckReportedBody sends req on p, which must send to srv, and fails t
// unless the body p reported sent (provider.Request.OnBody, which the
// agent keeps for the API) is byte for byte the one srv received.
func CheckReportedBody(t testing.TB, srv *Server, p provider.Provider, req provider.Request) {
	t.Helper()
	var reported []byte
	req.OnBody = func(b []byte) { reported = b }
	n := len(srv.Requests())
	if _, err := p.Complete(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()
	if len(got) != n+1 || !bytes.Equal(reported, got[n]) {
		t.Fatalf("reported\n%s\nreceived (%d requests)\n%s", reported, len(got)-n, got[len(got)-1])
	}
}

// SameExchange fails t unless the two requests of an Exchange, ours then
// the SDK's, are the same (method, URL, headers, body) or were refused
// alike (errs): for a wire held to sending what its SDK sends.
func SameExchange(t testing.TB, what string, got []Sent, errs []string) {
	t.Helper()
	if errs[0] != errs[1] {
		t.Fatalf("%s: error %q\nthe SDK's %q", what, errs[0], errs[1])
	}
	if got[0].Method != got[1].Method || got[0].URL != got[1].URL {
		t.Fatalf("%s: sent %s %q\nthe SDK's %s %q", what, got[0].Method, got[0].URL, got[1].Method, got[1].URL)
	}
	if !bytes.Equal(got[0].Body, got[1].Body) {
		t.Errorf("%s: sent\n%s\nthe SDK sent\n%s", what, got[0].Body, got[1].Body)
	}
	if !reflect.DeepEqual(got[0].Header, got[1].Header) {
		t.Errorf("%s: headers sent\n%v\nthe SDK sent\n%v", what, got[0].Header, got[1].Header)
	}
}

// SameRequests fails t unless the two providers Exchange ran sent the
// same request (method, URL, body and headers), and unless, where the
// second (a reference that reads nothing of the answer: the SDK's client
// a wire no longer links) refused to send, the first refused too, its
// error ending with the reference's words (a wire names itself before
// them). What either made of an answer is not compared.
func SameRequests(t testing.TB, what string, got []Sent, errs []string) {
	t.Helper()
	if got[1].URL == "" && errs[1] != "" {
		if got[0].URL != "" || !strings.HasSuffix(errs[0], errs[1]) {
			t.Fatalf("%s: sent %q, error %q\nthe reference refused: %q", what, got[0].URL, errs[0], errs[1])
		}
		return
	}
	SameExchange(t, what, got, []string{"", ""})
}
