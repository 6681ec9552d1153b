package collector

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

func TestRedactDropsTheUserInformationOfAURL(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"http://u:SECRET@collector:4318/v1/traces", "http://xxxxx@collector:4318/v1/traces"},
		{"https://SECRET@collector", "https://xxxxx@collector"},
		{"http://collector:4318/a@b", "http://collector:4318/a@b"},       // an @ in the path is no user
		{"http://collector:4318?to=a@b", "http://collector:4318?to=a@b"}, // nor in the query
		{"u:SECRET@collector:4317", "xxxxx@collector:4317"},              // no scheme: an opaque URL
		{"http://u:SE@CRET@collector/%zz", "http://xxxxx@collector/%zz"}, // url.Parse refuses it
		{"collector:4317", "collector:4317"},
		{"", ""},
	} {
		if got := redact(tt.in); got != tt.want {
			t.Errorf("redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// An endpoint variable refused at start is quoted in the error without
// its user information; every endpoint variable set is still checked.
func TestAnEndpointsErrorDoesNotQuoteItsUserInformation(t *testing.T) {
	for _, tt := range []struct {
		protocol string
		env      map[string]string
		want     string // the variable named
	}{
		{GRPC, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://u:SECRET@collector:4317/v1"}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{HTTPProtobuf, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "u:SECRET@collector:4318"}, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
		{HTTPProtobuf, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://u:SECRET@coll ector/"}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{GRPC, map[string]string{ // overridden, still checked
			"OTEL_EXPORTER_OTLP_ENDPOINT":        "ftp://SECRET@collector",
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4317",
		}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
	} {
		_, err := FromEnv(envOf(tt.env), noFiles, Traces, tt.protocol)
		if err == nil || strings.Contains(err.Error(), "SECRET") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: err %v", tt.env, err)
		}
	}
}

func TestNewsErrorDoesNotQuoteTheURLsUserInformation(t *testing.T) {
	_, err := New(Config{Signal: Traces, Protocol: HTTPProtobuf, URL: "ftp://u:SECRET@collector/v1/traces"})
	if err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("err %v", err)
	}
}

// A collector's refusal quotes the URL posted to without its user
// information (a Config's URL may hold one: net/http sends it as basic
// authorization).
func TestACollectorsRefusalDoesNotQuoteTheURLsUserInformation(t *testing.T) {
	s := newScripted(t, scripted{status: 400, body: []byte("no")})
	url := strings.Replace(s.URL, "http://", "http://u:SECRET@", 1)
	for _, proto := range []string{HTTPProtobuf, GRPC} {
		c, err := New(Config{Signal: Traces, Protocol: proto, URL: url + "/v1/traces", Timeout: DefaultTimeout})
		if err != nil {
			t.Fatal(err)
		}
		c.wait = func(context.Context, time.Duration) error { return errors.New("no retry") }
		_, err = c.Export(context.Background(), []byte("x"))
		c.Close()
		if err == nil || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("%s: err %v", proto, err)
		}
	}
}

// A transport failure quotes net/http's url.Error, which hides the
// password only: a user name alone (a token) is redacted too.
func TestATransportFailureDoesNotQuoteTheURLsUserName(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // a refused connection
	for _, proto := range []string{HTTPProtobuf, GRPC} {
		c, err := New(Config{Signal: Traces, Protocol: proto, URL: "http://SECRET@" + addr + "/v1/traces", Timeout: DefaultTimeout})
		if err != nil {
			t.Fatal(err)
		}
		c.wait = func(context.Context, time.Duration) error { return errors.New("no retry") }
		_, err = c.Export(context.Background(), []byte("x"))
		c.Close()
		if err == nil || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("%s: err %v", proto, err)
		}
	}
}
