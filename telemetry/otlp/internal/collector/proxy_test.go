package collector

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// connectProxy is a loopback HTTP CONNECT proxy counting its tunnels; it
// refuses a request without the authorization want, when want is set.
func connectProxy(t *testing.T, want string) (*url.URL, *atomic.Int32) {
	var tunnels atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		if want != "" && r.Header.Get("Proxy-Authorization") != want {
			http.Error(w, "who are you", http.StatusProxyAuthRequired)
			return
		}
		up, err := net.Dial("tcp", r.Host)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		tunnels.Add(1)
		w.WriteHeader(http.StatusOK)
		conn, buf, _ := w.(http.Hijacker).Hijack()
		go func() { io.Copy(up, buf); up.Close() }()
		io.Copy(conn, up)
		conn.Close()
	}))
	t.Cleanup(proxy.Close)
	pu, _ := url.Parse(proxy.URL)
	return pu, &tunnels
}

// Insecure gRPC (h2c) goes through the proxy as gRPC-Go's does: a CONNECT
// tunnel, with the proxy URL's user as basic authorization.
func TestInsecureGRPCGoesThroughAConnectProxy(t *testing.T) {
	s := startGRPC(t, nil, nil)
	pu, tunnels := connectProxy(t, "Basic dTpw") // u:p
	pu.User = url.UserPassword("u", "p")
	c := grpcClient(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + s.addr})
	c.proxy = http.ProxyURL(pu) // as HTTPS_PROXY would (ProxyFromEnvironment skips 127.0.0.1)
	c.wait = func(context.Context, time.Duration) error { return errors.New("no retry") }
	if _, err := c.Export(context.Background(), []byte{}); err != nil {
		t.Fatal(err)
	}
	if tunnels.Load() != 1 || len(s.got()) != 1 {
		t.Errorf("%d tunnels, %d calls", tunnels.Load(), len(s.got()))
	}
}

// A proxy that refuses the tunnel is an error saying so, the proxy's
// password not in it.
func TestAProxyRefusingTheTunnelIsAnError(t *testing.T) {
	s := startGRPC(t, nil, nil)
	pu, tunnels := connectProxy(t, "Basic right")
	pu.User = url.UserPassword("u", "SECRET")
	c := grpcClient(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + s.addr})
	c.proxy = http.ProxyURL(pu)
	c.wait = func(context.Context, time.Duration) error { return errors.New("no retry") }
	_, err := c.Export(context.Background(), []byte{})
	if err == nil || !strings.Contains(err.Error(), "407") || strings.Contains(err.Error(), "SECRET") || tunnels.Load() != 0 {
		t.Fatalf("err %v, %d tunnels", err, tunnels.Load())
	}
}

// gRPC over TLS goes through the proxy by net/http's own CONNECT.
func TestGRPCOverTLSGoesThroughAConnectProxy(t *testing.T) {
	pki := newPKI(t)
	s := startGRPC(t, &tls.Config{Certificates: []tls.Certificate{pki.server}, NextProtos: []string{"h2"}}, nil)
	pu, tunnels := connectProxy(t, "")
	c := grpcClient(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://" + s.addr, "OTEL_EXPORTER_OTLP_CERTIFICATE": pki.caFile})
	c.proxy = http.ProxyURL(pu)
	c.wait = func(context.Context, time.Duration) error { return errors.New("no retry") }
	if _, err := c.Export(context.Background(), []byte{}); err != nil {
		t.Fatal(err)
	}
	if tunnels.Load() != 1 || len(s.got()) != 1 {
		t.Errorf("%d tunnels, %d calls", tunnels.Load(), len(s.got()))
	}
}
