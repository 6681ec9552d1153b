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
