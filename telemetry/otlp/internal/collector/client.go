package collector

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	sdk "go.opentelemetry.io/otel/sdk"
)

// maxResponse caps the answer read from a collector, as the official's.
const maxResponse = 4 << 20

// retryPolicy is how failed attempts are retried: exponential backoff
// from initial by 1.5 up to max, each interval jittered ±50%, until
// elapsed has passed — the official's (5 s, 30 s, 1 min).
type retryPolicy struct {
	initial, max, elapsed time.Duration
}

var defaultRetry = retryPolicy{initial: 5 * time.Second, max: 30 * time.Second, elapsed: time.Minute}

// Client posts already-encoded Export*ServiceRequest messages of one
// signal to a collector over one protocol, retrying what the official
// exporters retry. It is safe for concurrent use. It must not decode or
// alter what it sends.
type Client struct {
	cfg       Config
	target    string // the URL posted to
	shown     string // target in errors: redact(target)
	userAgent string
	hc        *http.Client
	retry     retryPolicy
	wait      func(ctx context.Context, d time.Duration) error // between attempts; tests record instead
	proxy     func(*http.Request) (*url.URL, error)            // http.ProxyFromEnvironment; tests name theirs

	stop     chan struct{} // closed by Close: in-flight exports end
	stopOnce sync.Once

	connMu sync.Mutex
	conns  map[net.Conn]struct{} // open connections, closed by an export Close ended
}

// trackedConn is a connection of the Client's, forgotten when closed.
type trackedConn struct {
	net.Conn
	c    *Client
	once sync.Once
}

// Close closes the connection and forgets it.
func (t *trackedConn) Close() error {
	t.once.Do(func() {
		t.c.connMu.Lock()
		delete(t.c.conns, t)
		t.c.connMu.Unlock()
	})
	return t.Conn.Close()
}

// dial is the Transport's DialContext: d's, the connection tracked.
func (c *Client) dial(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		t := &trackedConn{Conn: conn, c: c}
		c.connMu.Lock()
		c.conns[t] = struct{}{}
		c.connMu.Unlock()
		return t, nil
	}
}

// closeConns closes every connection the Client has open.
func (c *Client) closeConns() {
	c.connMu.Lock()
	conns := make([]net.Conn, 0, len(c.conns))
	for conn := range c.conns {
		conns = append(conns, conn)
	}
	c.connMu.Unlock()
	for _, conn := range conns {
		conn.Close()
	}
}

// New is a Client sending as c says.
func New(c Config) (*Client, error) {
	if c.Signal != Traces && c.Signal != Metrics {
		return nil, fmt.Errorf("collector: signal %q: it is %q or %q", c.Signal, Traces, Metrics)
	}
	if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("collector: the URL %q is not an http or https URL with a host", redact(c.URL))
	}
	cl := &Client{cfg: c, target: c.URL, retry: defaultRetry, wait: wait, stop: make(chan struct{}), conns: map[net.Conn]struct{}{}, proxy: http.ProxyFromEnvironment}
	t := &http.Transport{
		Proxy:                 func(r *http.Request) (*url.URL, error) { return cl.proxy(r) },
		DialContext:           cl.dial(&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}),
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       c.TLS.Clone(),
	}
	switch c.Protocol {
	case HTTPProtobuf:
		cl.userAgent = "OTel OTLP Exporter Go/" + sdk.Version() + " (myelin)"
		if c.Signal == Metrics {
			cl.userAgent = "OTel Go OTLP over HTTP/protobuf metrics exporter/" + sdk.Version() + " (myelin)"
		}
	case GRPC:
		cl.userAgent = "OTel OTLP Exporter Go/" + sdk.Version() + " (myelin; gRPC over net/http)"
		service := "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
		if c.Signal == Metrics {
			cl.userAgent = "OTel Go OTLP over gRPC metrics exporter/" + sdk.Version() + " (myelin; gRPC over net/http)"
			service = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"
		}
		cl.target = strings.TrimRight(c.URL, "/") + service
		var p http.Protocols
		if strings.HasPrefix(c.URL, "http:") {
			// h2c with prior knowledge, as gRPC's insecure credentials
			p.SetUnencryptedHTTP2(true)
			// a proxy as gRPC-Go: a CONNECT tunnel (net/http would
			// forward the request as HTTP/1.1)
			t.DialContext = dialThroughProxy(t.DialContext, t.Proxy)
			t.Proxy = nil
		} else {
			p.SetHTTP2(true)
		}
		t.Protocols = &p
	default:
		return nil, fmt.Errorf("collector: protocol %q: it is %q or %q", c.Protocol, HTTPProtobuf, GRPC)
	}
	cl.hc = &http.Client{Transport: t}
	cl.shown = redact(cl.target)
	return cl, nil
}

// Close ends the exports in flight and frees the idle connections. An
// Export after Close fails.
func (c *Client) Close() {
	c.stopOnce.Do(func() { close(c.stop) })
	c.hc.CloseIdleConnections()
}

// Export posts body, an encoded Export{Trace,Metrics}ServiceRequest, and
// returns the collector's encoded Export*ServiceResponse (nil or empty
// when it sent none). It retries what the official exporters retry until
// the retry time has passed or ctx ends. Over gRPC the configured timeout
// bounds the whole export, retries included; over HTTP each attempt (both
// as the official's).
func (c *Client) Export(ctx context.Context, body []byte) ([]byte, error) {
	select {
	case <-c.stop:
		return nil, errShutdown
	default:
	}
	defer func() {
		// Close while this export was in flight: its connection was not
		// idle then (an HTTP/2 stream may still hold it as this returns),
		// and would stay open for IdleConnTimeout
		select {
		case <-c.stop:
			c.closeConns()
		default:
		}
	}()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func(done <-chan struct{}) { // done, not ctx: ctx is reassigned below
		select {
		case <-done:
		case <-c.stop:
			cancel(errShutdown)
		}
	}(ctx.Done())
	if c.cfg.Protocol == GRPC && c.cfg.Timeout > 0 {
		var end context.CancelFunc
		ctx, end = context.WithTimeoutCause(ctx, c.cfg.Timeout, errors.New("collector: the export timeout passed"))
		defer end()
	}
	payload := body
	if c.cfg.Gzip {
		var b bytes.Buffer
		z := gzip.NewWriter(&b)
		z.Write(body) // a bytes.Buffer does not fail
		z.Close()
		payload = b.Bytes()
	}
	attempt := c.postHTTP
	if c.cfg.Protocol == GRPC {
		attempt = c.postGRPC
	}

	start := time.Now()
	interval := c.retry.initial
	for {
		resp, err := attempt(ctx, payload)
		if err == nil {
			return resp, nil
		}
		var re *retryable
		if !errors.As(err, &re) {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (gave up: %w)", err, context.Cause(ctx))
		}
		elapsed := time.Since(start)
		if elapsed > c.retry.elapsed {
			return nil, fmt.Errorf("%w (gave up: retried for %v)", err, c.retry.elapsed)
		}
		delay := jitter(interval)
		interval = min(time.Duration(float64(interval)*1.5), c.retry.max)
		if re.delay > delay {
			delay = re.delay
		}
		if elapsed+re.delay > c.retry.elapsed {
			return nil, fmt.Errorf("%w (gave up: the collector asked to wait %v, past the %v of retries)", err, re.delay, c.retry.elapsed)
		}
		if werr := c.wait(ctx, delay); werr != nil {
			return nil, fmt.Errorf("%w (gave up waiting to retry: %w)", err, werr)
		}
	}
}

// wait waits d, or until ctx ends (its cause).
func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// jitter is d ±50%, at random.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.5 + rand.Float64()))
}

// retryable is an error worth another attempt, after delay at least (0:
// the backoff's).
type retryable struct {
	err   error
	delay time.Duration
}

// Error is the failed attempt's.
func (r *retryable) Error() string { return r.err.Error() }

// Unwrap is the failed attempt's error.
func (r *retryable) Unwrap() error { return r.err }
