package collector

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// deadlineConn records whether a deadline was set on it.
type deadlineConn struct {
	net.Conn
	mu  sync.Mutex
	set bool
}

func (d *deadlineConn) SetDeadline(t time.Time) error {
	d.mu.Lock()
	if !t.IsZero() {
		d.set = true
	}
	d.mu.Unlock()
	return d.Conn.SetDeadline(t)
}

// answerConnect reads a CONNECT from server and answers it with reply.
func answerConnect(server net.Conn, reply string) {
	br := bufio.NewReader(server)
	if _, err := http.ReadRequest(br); err == nil {
		io.WriteString(server, reply)
	}
}

// net/http detaches a dial from its request's context, so the dial's
// context has no deadline: connect must put one of its own on the
// CONNECT, or a proxy that never answers holds a goroutine and a
// connection per attempt until Close. (From the second review.)
func TestConnectSetsADeadlineWhenItsContextHasNone(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	rec := &deadlineConn{Conn: client}
	go answerConnect(server, "HTTP/1.1 200 OK\r\n\r\n")
	if _, err := connect(context.Background(), rec, &url.URL{Scheme: "http", Host: "proxy:3128"}, "target:4317"); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !rec.set {
		t.Errorf("connect set no deadline on a context without one")
	}
}

// countingConn counts the bytes read from it.
type countingConn struct {
	net.Conn
	mu sync.Mutex
	n  int
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.n += n
	c.mu.Unlock()
	return n, err
}

// A proxy whose answer's header does not end is read up to a limit (as
// net/http's CONNECT, 1 MiB), not for as long as it sends.
func TestConnectReadsAtMostAMebibyteOfTheProxysAnswer(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	cc := &countingConn{Conn: client}
	go func() {
		br := bufio.NewReader(server)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		io.WriteString(server, "HTTP/1.1 200 OK\r\n")
		line := "X-Filler: " + strings.Repeat("a", 1000) + "\r\n"
		for range 4 << 10 { // 4 MiB of header, never ended
			if _, err := io.WriteString(server, line); err != nil {
				return
			}
		}
		server.Close()
	}()
	_, err := connect(context.Background(), cc, &url.URL{Scheme: "http", Host: "proxy:3128"}, "target:4317")
	if err == nil {
		t.Fatal("an answer without its header's end is no tunnel")
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.n > maxConnectAnswer+64<<10 {
		t.Errorf("read %d bytes of the answer, the limit is %d", cc.n, maxConnectAnswer)
	}
}

// cancelOnWrite cancels its context once the CONNECT is written.
type cancelOnWrite struct {
	net.Conn
	cancel func()
}

func (c *cancelOnWrite) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.cancel()
	return n, err
}

// A context ended during the CONNECT is the CONNECT's error, with its
// cause, even when the proxy's answer came: the context's AfterFunc has
// started and may put its past deadline on the connection after connect
// has cleared it.
func TestAContextEndedDuringTheConnectIsItsErrorWithItsCause(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	cause := errors.New("the export was cancelled")
	ctx, cancel := context.WithCancelCause(context.Background())
	go answerConnect(server, "HTTP/1.1 200 OK\r\n\r\n")
	conn := &cancelOnWrite{Conn: client, cancel: func() { cancel(cause) }}
	_, err := connect(ctx, conn, &url.URL{Scheme: "http", Host: "proxy:3128"}, "target:4317")
	if !errors.Is(err, cause) {
		t.Errorf("err %v, want its cause %q", err, cause)
	}
}

// A CONNECT cancelled while it waits for the proxy's answer reports the
// cancel's cause, not the "i/o timeout" of the deadline that ended the
// read.
func TestACancelledConnectReportsItsCauseNotATimeout(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	cause := errors.New("the export was cancelled")
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		br := bufio.NewReader(server)
		if _, err := http.ReadRequest(br); err == nil {
			cancel(cause) // and never answers
		}
	}()
	_, err := connect(ctx, client, &url.URL{Scheme: "http", Host: "proxy:3128"}, "target:4317")
	if !errors.Is(err, cause) {
		t.Errorf("err %v, want its cause %q", err, cause)
	}
}

// A proxy URL without a port is dialled on its scheme's default port, as
// net/http does (HTTPS_PROXY=http://proxy is proxy:80).
func TestAProxyWithoutAPortIsDialledOnItsSchemesDefaultPort(t *testing.T) {
	for _, tt := range []struct{ proxy, want string }{
		{"http://proxy", "proxy:80"},
		{"https://proxy", "proxy:443"},
		{"http://proxy:3128", "proxy:3128"},
		{"http://[::1]", "[::1]:80"},
	} {
		pu, err := url.Parse(tt.proxy)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		dial := dialThroughProxy(func(_ context.Context, _, addr string) (net.Conn, error) {
			got = addr
			return nil, errors.New("recorded")
		}, http.ProxyURL(pu))
		dial(context.Background(), "tcp", "collector:4317")
		if got != tt.want {
			t.Errorf("%s: dialled %q, want %q", tt.proxy, got, tt.want)
		}
	}
}
