package collector

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// dialThroughProxy is the DialContext of insecure gRPC (h2c): as gRPC-Go,
// it asks proxy (HTTPS_PROXY, NO_PROXY: http.ProxyFromEnvironment) for the
// target as if it were https, and when there is one it opens an HTTP
// CONNECT tunnel through it (basic authorization from the proxy URL's user
// information); without one it dials the target. net/http would forward an
// http:// request to a proxy as HTTP/1.1, which a gRPC server does not
// answer. It speaks plain TCP to the proxy, on the port of its URL or its
// scheme's default: an http:// proxy; it must not be given an https:// or
// socks5:// one (the CONNECT is not TLS or SOCKS, and fails).
func dialThroughProxy(dial func(ctx context.Context, network, addr string) (net.Conn, error), proxy func(*http.Request) (*url.URL, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		pu, err := proxy(&http.Request{URL: &url.URL{Scheme: "https", Host: addr}})
		if err != nil {
			return nil, fmt.Errorf("collector: the proxy for %s: %w", addr, err)
		}
		if pu == nil {
			return dial(ctx, network, addr)
		}
		conn, err := dial(ctx, network, proxyAddr(pu))
		if err != nil {
			return nil, fmt.Errorf("collector: dialling the proxy %s: %w", redact(pu.String()), err)
		}
		tunnel, err := connect(ctx, conn, pu, addr)
		if err != nil {
			conn.Close()
			return nil, err
		}
		return tunnel, nil
	}
}

// proxyAddr is the host and port of the proxy at pu: its scheme's default
// port when it names none (80 for http, 443 for https), as net/http.
func proxyAddr(pu *url.URL) string {
	if pu.Port() != "" {
		return pu.Host
	}
	port := "80"
	if pu.Scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(pu.Hostname(), port)
}

// connectTimeout bounds a CONNECT whose context has no earlier deadline
// (net/http detaches a dial from its request's context); net/http's own
// CONNECT has the same.
const connectTimeout = time.Minute

// maxConnectAnswer is the most of the proxy's answer to a CONNECT that is
// read (net/http's default for a response's header: 1 MiB).
const maxConnectAnswer = 1 << 20

// connect asks the proxy at the other end of conn for a tunnel to addr, and
// returns it. The CONNECT ends at ctx's end (the error holds its cause) or
// its deadline, and after connectTimeout at the latest; it reads at most
// maxConnectAnswer bytes of the proxy's answer.
func connect(ctx context.Context, conn net.Conn, pu *url.URL, addr string) (net.Conn, error) {
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Host: addr}, Host: addr, Header: http.Header{}}
	if u := pu.User; u != nil {
		p, _ := u.Password()
		req.Header.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(u.Username()+":"+p)))
	}
	fail := func(err error) error {
		return fmt.Errorf("collector: CONNECT %s through the proxy %s: %w", addr, redact(pu.String()), err)
	}
	deadline := time.Now().Add(connectTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) }) // ends a read or write under way
	resp, br, err := exchange(conn, req)
	if !stop() {
		// the context ended: its AfterFunc has started, and may set its
		// past deadline after any reset here; the caller closes conn
		if err != nil {
			return nil, fail(fmt.Errorf("%w (%w)", context.Cause(ctx), err))
		}
		return nil, fail(context.Cause(ctx))
	}
	if err != nil {
		return nil, fail(err)
	}
	conn.SetDeadline(time.Time{})
	// the body is not closed: for a CONNECT it runs to the connection's
	// end, and closing would read it (net/http's proxy code does the same)
	if resp.StatusCode != http.StatusOK {
		return nil, fail(errors.New(resp.Status))
	}
	if n := br.Buffered(); n > 0 {
		// the server spoke first (its HTTP/2 settings) and the reader
		// took it with the proxy's answer
		first, _ := br.Peek(n)
		return &bufferedConn{Conn: conn, first: bytes.Clone(first)}, nil
	}
	return conn, nil
}

// exchange writes req on conn and reads the answer, at most
// maxConnectAnswer bytes of it; br holds what was read past the answer.
func exchange(conn net.Conn, req *http.Request) (resp *http.Response, br *bufio.Reader, err error) {
	if err := req.Write(conn); err != nil {
		return nil, nil, err
	}
	br = bufio.NewReader(&io.LimitedReader{R: conn, N: maxConnectAnswer})
	resp, err = http.ReadResponse(br, req)
	if err != nil {
		return nil, nil, err
	}
	return resp, br, nil
}

// bufferedConn is a connection whose first bytes were read already.
type bufferedConn struct {
	net.Conn
	first []byte // what was read, not yet returned
}

// Read reads the first bytes, then the connection.
func (c *bufferedConn) Read(p []byte) (int, error) {
	if len(c.first) > 0 {
		n := copy(p, c.first)
		c.first = c.first[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
