package collector

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
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
// answer.
func dialThroughProxy(dial func(ctx context.Context, network, addr string) (net.Conn, error), proxy func(*http.Request) (*url.URL, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		pu, err := proxy(&http.Request{URL: &url.URL{Scheme: "https", Host: addr}})
		if err != nil {
			return nil, fmt.Errorf("collector: the proxy for %s: %w", addr, err)
		}
		if pu == nil {
			return dial(ctx, network, addr)
		}
		conn, err := dial(ctx, network, pu.Host)
		if err != nil {
			return nil, fmt.Errorf("collector: dialling the proxy %s: %w", pu.Redacted(), err)
		}
		tunnel, err := connect(ctx, conn, pu, addr)
		if err != nil {
			conn.Close()
			return nil, err
		}
		return tunnel, nil
	}
}

// connect asks the proxy at the other end of conn for a tunnel to addr, and
// returns it.
func connect(ctx context.Context, conn net.Conn, pu *url.URL, addr string) (net.Conn, error) {
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Host: addr}, Host: addr, Header: http.Header{}}
	if u := pu.User; u != nil {
		p, _ := u.Password()
		req.Header.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(u.Username()+":"+p)))
	}
	if d, ok := ctx.Deadline(); ok {
		conn.SetDeadline(d)
		defer conn.SetDeadline(time.Time{})
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) }) // ends a read or write under way
	defer stop()
	if err := req.Write(conn); err != nil {
		return nil, fmt.Errorf("collector: CONNECT %s through the proxy %s: %w", addr, pu.Redacted(), err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return nil, fmt.Errorf("collector: CONNECT %s through the proxy %s: %w", addr, pu.Redacted(), err)
	}
	// the body is not closed: for a CONNECT it runs to the connection's
	// end, and closing would read it (net/http's proxy code does the same)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("collector: CONNECT %s through the proxy %s: %s", addr, pu.Redacted(), resp.Status)
	}
	if br.Buffered() > 0 {
		// the server spoke first (its HTTP/2 settings) and the reader
		// took it with the proxy's answer
		return &bufferedConn{Conn: conn, r: br}, nil
	}
	return conn, nil
}

// bufferedConn is a connection whose first bytes were read into r.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

// Read reads what r holds, then the connection.
func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
