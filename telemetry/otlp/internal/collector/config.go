// Package collector sends already-encoded OTLP export requests to a
// collector over http/protobuf or gRPC, with the retries, TLS, headers,
// compression and timeout the OTEL_EXPORTER_OTLP_* environment asks for,
// read as the official Go OTLP exporters (v1.43.0) read it; and wraps that
// sending as the SDK's span and metric exporters.
//
// It speaks gRPC by hand over net/http's HTTP/2 and must not import
// google.golang.org/grpc, google.golang.org/protobuf,
// go.opentelemetry.io/proto or any OTLP exporter package: they are what
// it replaces (cold start, binary size). It must not encode telemetry
// either: the encoding is given to it as a function.
package collector

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	pathpkg "path"
	"strconv"
	"strings"
	"time"
	"unicode"

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// The signals and protocols a Config is for.
const (
	Traces  = "traces"
	Metrics = "metrics"

	HTTPProtobuf = "http/protobuf"
	GRPC         = "grpc"
)

// DefaultTimeout is how long an export may take when
// OTEL_EXPORTER_OTLP_[SIGNAL_]TIMEOUT does not say, as the official's.
const DefaultTimeout = 10 * time.Second

// Config is where and how a Client sends one signal. FromEnv reads it
// from the environment; a test may build one by hand.
type Config struct {
	Signal   string // Traces or Metrics
	Protocol string // HTTPProtobuf or GRPC
	// URL is what is posted to: for http/protobuf the whole URL
	// (http://host:4318/v1/traces), for gRPC the scheme and host only
	// (http://host:4317); http means no TLS (h2c for gRPC).
	URL         string
	Headers     map[string]string // sent as is (HTTP) or lower-cased (gRPC metadata)
	Gzip        bool
	Timeout     time.Duration // 0: none
	TLS         *tls.Config   // nil: the system's roots, no client certificate
	Temporality sdkmetric.TemporalitySelector
	Aggregation sdkmetric.AggregationSelector
}

// FromEnv reads the configuration of signal (Traces or Metrics) over
// protocol (HTTPProtobuf or GRPC) from getenv, reading the certificate
// files it names with readFile, as the official exporters v1.43.0 do: each
// OTEL_EXPORTER_OTLP_<SIGNAL>_X over OTEL_EXPORTER_OTLP_X.
//
// Where the official would log a bad value and carry on with telemetry
// going elsewhere or refused — an endpoint that is not an http(s) URL, a
// gRPC endpoint (the one that wins) with a path, a header pair it cannot
// read, a certificate or key it cannot read, a client certificate or key
// with no whole pair, a certificate with an insecure endpoint — FromEnv
// returns an error naming the variable; a header error names the pair by
// its position, never its text (headers hold secrets). Where the telemetry
// still arrives — a bad timeout, an unknown compression, temporality or
// histogram aggregation, a lone client certificate or key beside a whole
// pair — it does as the official: it reports the value through
// otel.Handle and uses the default (for a signal's timeout, the generic
// one). An empty header pair (a trailing comma) is skipped, as the
// official skips it. A gRPC endpoint without a port is port 443, as
// gRPC-Go dials it, http or https.
func FromEnv(getenv func(string) string, readFile func(string) ([]byte, error), signal, protocol string) (Config, error) {
	if signal != Traces && signal != Metrics {
		return Config{}, fmt.Errorf("collector: signal %q: it is %q or %q", signal, Traces, Metrics)
	}
	if protocol != HTTPProtobuf && protocol != GRPC {
		return Config{}, fmt.Errorf("collector: protocol %q: it is %q or %q", protocol, HTTPProtobuf, GRPC)
	}
	S := strings.ToUpper(signal)
	env := func(key string) (name, value string) {
		name = "OTEL_EXPORTER_OTLP_" + S + "_" + key
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return name, v
		}
		name = "OTEL_EXPORTER_OTLP_" + key
		return name, strings.TrimSpace(getenv(name))
	}
	c := Config{Signal: signal, Protocol: protocol, Timeout: DefaultTimeout}

	// the endpoint and whether it is secure; each must be a URL, the
	// path (and, for gRPC, the port) are the winning one's
	host, path, insecure := "localhost:4318", "/v1/"+signal, false
	if protocol == GRPC {
		host, path = "localhost:4317", ""
	}
	secureFrom := "" // the variable that made the endpoint insecure
	for _, key := range []string{"ENDPOINT", S + "_ENDPOINT"} {
		name := "OTEL_EXPORTER_OTLP_" + key
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			continue
		}
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Config{}, fmt.Errorf("collector: %s=%q: the endpoint is a URL with its scheme, http or https (http://collector:4318; for gRPC, http://collector:4317)", name, redact(v))
		}
		host, insecure, secureFrom = u.Host, u.Scheme == "http", name
		switch {
		case protocol == GRPC:
			if key == "ENDPOINT" && strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_"+S+"_ENDPOINT")) != "" {
				continue // overridden: its path is no concern of this signal's
			}
			// the official dials host/path, which no gRPC server answers
			if u.Path != "" && u.Path != "/" {
				return Config{}, fmt.Errorf("collector: %s=%q: a gRPC endpoint has no path (http://collector:4317)", name, redact(v))
			}
			if u.Port() == "" {
				host = net.JoinHostPort(u.Hostname(), "443") // gRPC-Go's default port, http or https
			}
		case key == "ENDPOINT":
			// a base URL: the signal's path is added
			path = pathpkg.Join(u.Path, "/v1/"+signal)
		default:
			// a signal's endpoint is used as is
			path = u.Path
			if path == "" {
				path = "/"
			}
		}
	}
	// INSECURE after the endpoints, as the official: it wins over the scheme
	for _, key := range []string{"INSECURE", S + "_INSECURE"} {
		name := "OTEL_EXPORTER_OTLP_" + key
		if v := strings.TrimSpace(getenv(name)); v != "" {
			insecure = strings.EqualFold(v, "true")
			secureFrom = name
		}
	}
	scheme := "https"
	if insecure {
		scheme = "http"
	}
	c.URL = (&url.URL{Scheme: scheme, Host: host, Path: path}).String()

	if name, v := env("HEADERS"); v != "" {
		h, err := headers(v, protocol == GRPC)
		if err != nil {
			return Config{}, fmt.Errorf("collector: %s: %w (comma-separated key=value pairs, values URL-encoded)", name, err)
		}
		c.Headers = h
	}
	if name, v := env("COMPRESSION"); v != "" {
		switch v {
		case "gzip":
			c.Gzip = true
		case "none":
		default:
			otel.Handle(fmt.Errorf("collector: %s=%q: the compressions are \"gzip\" and \"none\"; sending uncompressed", name, v))
		}
	}
	// the generic timeout, then the signal's: a bad one is reported and
	// the one before kept, as the official
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_" + S + "_TIMEOUT"} {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			continue
		}
		ms, err := strconv.Atoi(v)
		if err != nil || ms < 0 {
			otel.Handle(fmt.Errorf("collector: %s=%q: the timeout is a number of milliseconds; using %v", name, v, c.Timeout))
			continue
		}
		c.Timeout = time.Duration(ms) * time.Millisecond
	}
	tc, certFrom, err := tlsConfig(env, getenv, S, readFile)
	if err != nil {
		return Config{}, err
	}
	if tc != nil && insecure {
		// the official http exporter refuses this too; its gRPC one would
		// speak TLS to an http:// endpoint
		return Config{}, fmt.Errorf("collector: %s makes the %s endpoint %s insecure but %s gives a certificate: use https (or drop the certificate)", secureFrom, signal, redact(c.URL), certFrom)
	}
	c.TLS = tc
	if signal == Metrics {
		c.Temporality, c.Aggregation = metricPreferences(getenv)
	}
	return c, nil
}

// tlsConfig is the TLS configuration the certificate variables ask for,
// nil when they name none, and the variable that asked for it. The client
// certificate and key are read as pairs, as the official: the signal's
// pair when both are set, else the generic pair; a lone half beside a
// whole pair is reported and ignored, a lone half with no whole pair is an
// error (the collector would refuse the exports).
func tlsConfig(env func(string) (string, string), getenv func(string) string, S string, readFile func(string) ([]byte, error)) (*tls.Config, string, error) {
	var tc *tls.Config
	from := ""
	if name, file := env("CERTIFICATE"); file != "" {
		pem, err := readFile(file)
		if err != nil {
			return nil, "", fmt.Errorf("collector: %s: reading the CA certificate: %w", name, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, "", fmt.Errorf("collector: %s=%q: no PEM certificate in the file", name, file)
		}
		tc, from = &tls.Config{RootCAs: pool}, name
	}
	var cn, cert, kn, key, lone string
	for _, prefix := range []string{"OTEL_EXPORTER_OTLP_" + S + "_", "OTEL_EXPORTER_OTLP_"} {
		pcn, pkn := prefix+"CLIENT_CERTIFICATE", prefix+"CLIENT_KEY"
		pc, pk := strings.TrimSpace(getenv(pcn)), strings.TrimSpace(getenv(pkn))
		switch {
		case pc != "" && pk != "" && cert == "":
			cn, cert, kn, key = pcn, pc, pkn, pk
		case pc != "" && pk == "" && lone == "":
			lone = pcn
		case pc == "" && pk != "" && lone == "":
			lone = pkn
		}
	}
	if lone != "" {
		if cert == "" {
			return nil, "", fmt.Errorf("collector: %s is set alone: a client certificate needs its key and a key its certificate", lone)
		}
		otel.Handle(fmt.Errorf("collector: %s is set alone, without its other half: ignored, as the official; using %s and %s", lone, cn, kn))
	}
	if cert != "" {
		cb, err := readFile(cert)
		if err != nil {
			return nil, "", fmt.Errorf("collector: %s: reading the client certificate: %w", cn, err)
		}
		kb, err := readFile(key)
		if err != nil {
			return nil, "", fmt.Errorf("collector: %s: reading the client key: %w", kn, err)
		}
		pair, err := tls.X509KeyPair(cb, kb)
		if err != nil {
			return nil, "", fmt.Errorf("collector: %s=%q and %s=%q: %w", cn, cert, kn, key, err)
		}
		if tc == nil {
			tc = &tls.Config{}
		}
		tc.Certificates = []tls.Certificate{pair}
		if from == "" {
			from = cn
		}
	}
	return tc, from, nil
}

// headers reads "k1=v1,k2=v2", the values URL-encoded (the keys are not).
// An empty pair (a trailing comma) is skipped, as the official skips it.
// A value with control characters is an error (net/http would refuse
// every export), but in gRPC's binary metadata (a name ending in -bin).
// An error names the pair by its position and says what is wrong, never
// its text: a header is often a secret (an API key).
func headers(s string, grpc bool) (map[string]string, error) {
	h := map[string]string{}
	for i, pair := range strings.Split(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		if !ok {
			return nil, fmt.Errorf("pair %d has no '='", i+1)
		}
		k = strings.TrimSpace(k)
		if !token(k) {
			return nil, fmt.Errorf("pair %d: the name is not a header name (letters, digits and !#$%%&'*+-.^_`|~)", i+1)
		}
		dv, err := url.PathUnescape(v)
		if err != nil {
			// not wrapped: url's error quotes the value
			return nil, fmt.Errorf("pair %d: the value has a bad %%-escape (%%XX, two hex digits)", i+1)
		}
		dv = strings.TrimSpace(dv)
		if !(grpc && strings.HasSuffix(strings.ToLower(k), "-bin")) && strings.ContainsFunc(dv, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
			return nil, fmt.Errorf("pair %d: the value holds a control character", i+1)
		}
		h[k] = dv
	}
	return h, nil
}

// token reports whether s is an HTTP token (RFC 9110), as a header name is.
func token(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c > unicode.MaxASCII || !(unicode.IsLetter(c) || unicode.IsDigit(c) || strings.ContainsRune("!#$%&'*+-.^_`|~", c)) {
			return false
		}
	}
	return true
}

// metricPreferences are the temporality and aggregation the METRICS
// variables ask for; a bad value is reported and the default used.
func metricPreferences(getenv func(string) string) (sdkmetric.TemporalitySelector, sdkmetric.AggregationSelector) {
	ts := sdkmetric.TemporalitySelector(sdkmetric.CumulativeTemporalitySelector)
	const tn = "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE"
	switch v := strings.TrimSpace(getenv(tn)); strings.ToLower(v) {
	case "", "cumulative":
	case "delta":
		ts = sdkmetric.DeltaTemporalitySelector
	case "lowmemory":
		ts = sdkmetric.LowMemoryTemporalitySelector
	default:
		otel.Handle(fmt.Errorf("collector: %s=%q: the preferences are cumulative, delta and lowmemory; using cumulative", tn, v))
	}
	as := sdkmetric.AggregationSelector(sdkmetric.DefaultAggregationSelector)
	const an = "OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION"
	switch v := strings.TrimSpace(getenv(an)); strings.ToLower(v) {
	case "", "explicit_bucket_histogram":
	case "base2_exponential_bucket_histogram":
		as = func(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
			if k == sdkmetric.InstrumentKindHistogram {
				return sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: 160, MaxScale: 20}
			}
			return sdkmetric.DefaultAggregationSelector(k)
		}
	default:
		otel.Handle(fmt.Errorf("collector: %s=%q: the aggregations are explicit_bucket_histogram and base2_exponential_bucket_histogram; using explicit_bucket_histogram", an, v))
	}
	return ts, as
}

var errShutdown = errors.New("collector: the exporter is shut down")

// redact is the URL s, for an error, without its user information (a
// user name may be a token, as a password): "http://xxxxx@host/path". It
// works on the text, so that a value url.Parse refuses, or reads as
// another scheme's opaque part ("user:token@collector:4317"), is redacted
// too; it must not be used to build a URL that is dialled.
func redact(s string) string {
	start := 0
	if i := strings.Index(s, "://"); i >= 0 {
		start = i + len("://")
	}
	end := len(s)
	if i := strings.IndexAny(s[start:], "/?#"); i >= 0 {
		end = start + i
	}
	at := strings.LastIndex(s[start:end], "@")
	if at < 0 {
		return s
	}
	return s[:start] + "xxxxx" + s[start+at:]
}

// redactURLError takes the user information out of the URL that err, a
// *url.Error of net/http's Client, quotes: net/http hides the password
// only, and a user name may be a token.
func redactURLError(err error) {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = redact(ue.URL)
	}
}
