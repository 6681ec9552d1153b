package collector

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// envOf is a getenv reading m.
func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func noFiles(name string) ([]byte, error) { return nil, os.ErrNotExist }

func TestFromEnvReadsTheVariablesAsTheOfficialExporters(t *testing.T) {
	tests := []struct {
		name     string
		signal   string
		protocol string
		env      map[string]string
		url      string
		headers  map[string]string
		gzip     bool
		timeout  time.Duration
	}{
		{name: "defaults http", signal: Traces, protocol: HTTPProtobuf, url: "https://localhost:4318/v1/traces", timeout: 10 * time.Second},
		{name: "defaults grpc", signal: Metrics, protocol: GRPC, url: "https://localhost:4317", timeout: 10 * time.Second},
		{name: "generic endpoint gets the signal path", signal: Traces, protocol: HTTPProtobuf,
			env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:1234"}, url: "http://c:1234/v1/traces", timeout: DefaultTimeout},
		{name: "generic endpoint with a path", signal: Metrics, protocol: HTTPProtobuf,
			env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c/base/"}, url: "https://c/base/v1/metrics", timeout: DefaultTimeout},
		{name: "signal endpoint as is", signal: Traces, protocol: HTTPProtobuf,
			env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://generic:1", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:2/custom/path"},
			url: "http://c:2/custom/path", timeout: DefaultTimeout},
		{name: "signal endpoint without a path is /", signal: Traces, protocol: HTTPProtobuf,
			env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:2"}, url: "http://c:2/", timeout: DefaultTimeout},
		{name: "the other signal's endpoint is not ours", signal: Metrics, protocol: HTTPProtobuf,
			env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:2"}, url: "https://localhost:4318/v1/metrics", timeout: DefaultTimeout},
		{name: "grpc endpoint", signal: Traces, protocol: GRPC,
			env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317/"}, url: "http://c:4317", timeout: DefaultTimeout},
		{name: "insecure wins over https", signal: Traces, protocol: GRPC,
			env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c:4317", "OTEL_EXPORTER_OTLP_INSECURE": "true"}, url: "http://c:4317", timeout: DefaultTimeout},
		{name: "signal insecure=false wins over the generic", signal: Traces, protocol: HTTPProtobuf,
			env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_INSECURE": "true", "OTEL_EXPORTER_OTLP_TRACES_INSECURE": "false"},
			url: "https://c/v1/traces", timeout: DefaultTimeout},
		{name: "headers URL-decoded, the signal's over the generic", signal: Traces, protocol: HTTPProtobuf,
			env: map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a=1", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "Authorization=Bearer%20x%2Cy, X-Tenant = t%3D1 "},
			url: "https://localhost:4318/v1/traces", headers: map[string]string{"Authorization": "Bearer x,y", "X-Tenant": "t=1"}, timeout: DefaultTimeout},
		{name: "gzip and timeout", signal: Metrics, protocol: HTTPProtobuf,
			env: map[string]string{"OTEL_EXPORTER_OTLP_COMPRESSION": "none", "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_TIMEOUT": "2500"},
			url: "https://localhost:4318/v1/metrics", gzip: true, timeout: 2500 * time.Millisecond},
		{name: "a timeout of 0 is none", signal: Traces, protocol: GRPC,
			env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "0"}, url: "https://localhost:4317"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := FromEnv(envOf(tt.env), noFiles, tt.signal, tt.protocol)
			if err != nil {
				t.Fatal(err)
			}
			got := struct {
				URL     string
				Headers map[string]string
				Gzip    bool
				Timeout time.Duration
			}{c.URL, c.Headers, c.Gzip, c.Timeout}
			want := struct {
				URL     string
				Headers map[string]string
				Gzip    bool
				Timeout time.Duration
			}{tt.url, tt.headers, tt.gzip, tt.timeout}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("(-want +got)\n%s", d)
			}
		})
	}
}

func TestFromEnvRefusesWhatWouldLoseTelemetry(t *testing.T) {
	tests := []struct {
		name     string
		protocol string
		env      map[string]string
		want     string // in the error
	}{
		{"endpoint without scheme", HTTPProtobuf, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"signal endpoint not a URL", HTTPProtobuf, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://%zz"}, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
		{"grpc endpoint with a path", GRPC, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317/otlp"}, "no path"},
		{"header without =", HTTPProtobuf, map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a=1,b"}, "OTEL_EXPORTER_OTLP_HEADERS"},
		{"header with a bad escape", HTTPProtobuf, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "a=%zz"}, "OTEL_EXPORTER_OTLP_TRACES_HEADERS"},
		{"header value with a control character", HTTPProtobuf, map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a=x%0Ay"}, "control character"},
		{"header value with a control character, gRPC", GRPC, map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a=x%01"}, "control character"},
		{"header name not a token", GRPC, map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a b=1"}, "not a header name"},
		{"missing CA file", HTTPProtobuf, map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": "testdata/missing.pem"}, "OTEL_EXPORTER_OTLP_CERTIFICATE"},
		{"CA file without PEM", GRPC, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": "testdata/not-pem.txt"}, "no PEM certificate"},
		{"client certificate without key", HTTPProtobuf, map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "testdata/not-pem.txt"}, "needs its key"},
		{"bad client pair", HTTPProtobuf, map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "testdata/not-pem.txt", "OTEL_EXPORTER_OTLP_CLIENT_KEY": "testdata/not-pem.txt"}, "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"},
		{"certificate with an http endpoint", GRPC, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_CERTIFICATE": "{ca}"}, "insecure"},
	}
	pki := newPKI(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				tt.env[k] = strings.ReplaceAll(v, "{ca}", pki.caFile)
			}
			_, err := FromEnv(envOf(tt.env), os.ReadFile, Traces, tt.protocol)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one saying %q", err, tt.want)
			}
		})
	}
}

// handled records what is handed to otel.Handle for the rest of t.
func handled(t *testing.T) *[]error {
	var errs []error
	prev := otel.GetErrorHandler()
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { errs = append(errs, err) }))
	t.Cleanup(func() { otel.SetErrorHandler(prev) })
	return &errs
}

func TestFromEnvReportsAndDefaultsWhatStillArrives(t *testing.T) {
	errs := handled(t)
	c, err := FromEnv(envOf(map[string]string{
		"OTEL_EXPORTER_OTLP_TIMEOUT":                               "10s",
		"OTEL_EXPORTER_OTLP_COMPRESSION":                           "zstd",
		"OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE":        "sometimes",
		"OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION": "fancy",
	}), noFiles, Metrics, HTTPProtobuf)
	if err != nil {
		t.Fatal(err)
	}
	if c.Timeout != DefaultTimeout || c.Gzip {
		t.Errorf("timeout %v gzip %v, want the defaults", c.Timeout, c.Gzip)
	}
	if got := c.Temporality(sdkmetric.InstrumentKindCounter); got != metricdata.CumulativeTemporality {
		t.Errorf("temporality %v, want cumulative", got)
	}
	if _, ok := c.Aggregation(sdkmetric.InstrumentKindHistogram).(sdkmetric.AggregationExplicitBucketHistogram); !ok {
		t.Errorf("aggregation %T, want the explicit buckets", c.Aggregation(sdkmetric.InstrumentKindHistogram))
	}
	joined := errors.Join(*errs...)
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_COMPRESSION", "TEMPORALITY_PREFERENCE", "HISTOGRAM_AGGREGATION"} {
		if joined == nil || !strings.Contains(joined.Error(), name) {
			t.Errorf("nothing reported of %s: %v", name, joined)
		}
	}
}

func TestFromEnvMetricPreferences(t *testing.T) {
	tests := []struct {
		temporality, aggregation string
		counter, updown          metricdata.Temporality
		exponential              bool
	}{
		{"", "", metricdata.CumulativeTemporality, metricdata.CumulativeTemporality, false},
		{"Delta", "base2_exponential_bucket_histogram", metricdata.DeltaTemporality, metricdata.CumulativeTemporality, true},
		{"lowmemory", "explicit_bucket_histogram", metricdata.DeltaTemporality, metricdata.CumulativeTemporality, false},
		{"cumulative", "", metricdata.CumulativeTemporality, metricdata.CumulativeTemporality, false},
	}
	for _, tt := range tests {
		t.Run(tt.temporality+"/"+tt.aggregation, func(t *testing.T) {
			c, err := FromEnv(envOf(map[string]string{
				"OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE":        tt.temporality,
				"OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION": tt.aggregation,
			}), noFiles, Metrics, GRPC)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Temporality(sdkmetric.InstrumentKindCounter); got != tt.counter {
				t.Errorf("counter %v, want %v", got, tt.counter)
			}
			if got := c.Temporality(sdkmetric.InstrumentKindUpDownCounter); got != tt.updown {
				t.Errorf("up-down counter %v, want %v", got, tt.updown)
			}
			_, exp := c.Aggregation(sdkmetric.InstrumentKindHistogram).(sdkmetric.AggregationBase2ExponentialHistogram)
			if exp != tt.exponential {
				t.Errorf("exponential histogram %v, want %v", exp, tt.exponential)
			}
		})
	}
}

// A header pair written as HTTP writes it ("name: value"), or a name
// holding the secret, is refused by its position and what is wrong with
// it: never its name or value (an API key would end up in the logs).
func TestAHeaderErrorNamesThePairByPositionNeverItsText(t *testing.T) {
	for _, tt := range []struct{ v, want string }{
		{"Authorization: Bearer sk-live-SECRET", "pair 1 has no '='"},
		{"a=1,x-honeycomb-team:SECRET", "pair 2 has no '='"},
		{"api-key SECRET=", "pair 1: the name is not a header name"},
		{"a=1,,b=%zzSECRET", "pair 3: the value has a bad %-escape"},
		{"SECRETKEY=x%0ASECRET", "pair 1: the value holds a control character"},
	} {
		_, err := FromEnv(envOf(map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": tt.v}), noFiles, Traces, HTTPProtobuf)
		if err == nil {
			t.Fatalf("%q: no error", tt.v)
		}
		if strings.Contains(err.Error(), "SECRET") || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_HEADERS") {
			t.Errorf("%q: err %v, want one saying %q without the pair's text", tt.v, err, tt.want)
		}
	}
}

// A trailing comma or an empty pair loses nothing: it is skipped, as the
// official skips it, and the other headers are sent.
func TestAnEmptyHeaderPairIsSkipped(t *testing.T) {
	for _, v := range []string{"api-key=k,", "api-key=k, ,x=1", ",api-key=k"} {
		c, err := FromEnv(envOf(map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": v}), noFiles, Traces, HTTPProtobuf)
		if err != nil {
			t.Errorf("%q: %v", v, err)
			continue
		}
		if c.Headers["api-key"] != "k" || len(c.Headers) > 2 {
			t.Errorf("%q: headers %v", v, c.Headers)
		}
	}
}

// Traces over gRPC to their own endpoint, metrics over HTTP to a base URL
// with a path: the generic endpoint is overridden for traces, so its path
// is no error of theirs (the official takes it).
func TestAGRPCPathIsCheckedOnlyOnTheEndpointThatWins(t *testing.T) {
	env := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":        "http://collector:4318/otlp",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4317",
	}
	c, err := FromEnv(envOf(env), noFiles, Traces, GRPC)
	if err != nil {
		t.Fatal(err)
	}
	if c.URL != "http://collector:4317" {
		t.Errorf("URL %q", c.URL)
	}
	env = map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":        "http://collector:4317",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4317/otlp",
	}
	if _, err := FromEnv(envOf(env), noFiles, Traces, GRPC); err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
		t.Errorf("a path on the winning endpoint: err %v", err)
	}
}

// A gRPC endpoint without a port is dialled on 443, as gRPC-Go does, even
// when it is http (insecure).
func TestAGRPCEndpointWithoutAPortIs443AsGRPCGo(t *testing.T) {
	for _, ep := range []string{"http://collector", "https://collector", "http://collector/"} {
		c, err := FromEnv(envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep}), noFiles, Traces, GRPC)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(c.URL, "://collector:443") {
			t.Errorf("%s: URL %q", ep, c.URL)
		}
	}
	c, err := FromEnv(envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector"}), noFiles, Traces, HTTPProtobuf)
	if err != nil || c.URL != "http://collector/v1/traces" {
		t.Errorf("http/protobuf keeps the URL's default port: %q, %v", c.URL, err)
	}
}

// A bad signal timeout is reported and the generic one kept, as the
// official (it applies the generic, then fails to read the signal's).
func TestABadSignalTimeoutKeepsTheGenericOne(t *testing.T) {
	errs := handled(t)
	c, err := FromEnv(envOf(map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "30000", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "5s"}), noFiles, Traces, HTTPProtobuf)
	if err != nil {
		t.Fatal(err)
	}
	if c.Timeout != 30*time.Second || len(*errs) != 1 || !strings.Contains((*errs)[0].Error(), "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT") {
		t.Errorf("timeout %v, reported %v; want the generic 30s and the signal's reported", c.Timeout, *errs)
	}
}

// The client certificate and key are read as pairs, as the official: the
// signal's pair when both are set, else the generic pair; a lone half
// beside a whole pair is reported and ignored.
func TestClientCertificateAndKeyAreReadAsPairs(t *testing.T) {
	pki, other := newPKI(t), newPKI(t)
	errs := handled(t)
	env := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":           "https://collector:4318",
		"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": pki.clientCert,
		"OTEL_EXPORTER_OTLP_CLIENT_KEY":         pki.clientKey,
		"OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY":  other.clientKey,
	}
	c, err := FromEnv(envOf(env), os.ReadFile, Traces, HTTPProtobuf)
	if err != nil {
		t.Fatalf("the official uses the generic pair: %v", err)
	}
	if c.TLS == nil || len(c.TLS.Certificates) != 1 || len(*errs) != 1 {
		t.Fatalf("TLS %+v, reported %v", c.TLS, *errs)
	}
	// the signal's whole pair wins over the generic one
	env["OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE"] = other.clientCert
	env["OTEL_EXPORTER_OTLP_CLIENT_KEY"] = "testdata/missing.pem" // not read
	if _, err := FromEnv(envOf(env), os.ReadFile, Traces, HTTPProtobuf); err != nil {
		t.Fatalf("the signal's pair: %v", err)
	}
}

// A certificate with an insecure endpoint: the error names the variables
// at odds, the certificate's and the endpoint's (or INSECURE).
func TestACertificateWithAnInsecureEndpointNamesTheVariables(t *testing.T) {
	pki := newPKI(t)
	for _, tt := range []struct {
		env  map[string]string
		want []string
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_CERTIFICATE": pki.caFile},
			[]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_CERTIFICATE"}},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c:4317", "OTEL_EXPORTER_OTLP_TRACES_INSECURE": "true", "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE": pki.clientCert, "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY": pki.clientKey},
			[]string{"OTEL_EXPORTER_OTLP_TRACES_INSECURE", "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE"}},
	} {
		_, err := FromEnv(envOf(tt.env), os.ReadFile, Traces, GRPC)
		for _, w := range tt.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%v: err %v, want one naming %s", tt.env, err, w)
			}
		}
	}
}
