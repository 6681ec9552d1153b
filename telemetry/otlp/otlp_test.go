package otlp_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/telemetry"
	"github.com/myelin-run/myelin/telemetry/otlp"
	"github.com/myelin-run/myelin/telemetry/otlptest"
	"go.opentelemetry.io/otel"
)

// setup runs telemetry.Setup and shuts it down when t ends.
func setup(t *testing.T) {
	t.Helper()
	shutdown, err := otlp.Setup(context.Background(), otlp.Config{Service: "myelin-test"})
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	t.Cleanup(func() { shutdown(context.Background()) })
}

func TestWithNoOTELVariablesTelemetryIsOffAndSaysNothing(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER"} {
		t.Setenv(k, "")
	}
	setup(t)
	if telemetry.On() {
		t.Fatal("telemetry is on with no OTEL_* variable set")
	}
	ctx, span := otel.Tracer("t").Start(context.Background(), "x")
	defer span.End()
	if tp := telemetry.TraceParent(ctx); tp != "" {
		t.Errorf("TraceParent with telemetry off = %q, want \"\"", tp)
	}
	if id, _ := telemetry.IDs(ctx); id != "" {
		t.Errorf("IDs with telemetry off = %q, want \"\"", id)
	}
}

func TestSetupExportsSpansAndMetricsOverHTTPAndGRPC(t *testing.T) {
	for _, c := range []struct{ proto, compression string }{
		{"http/protobuf", ""}, {"grpc", ""}, {"http/protobuf", "gzip"}, {"grpc", "gzip"},
	} {
		t.Run(c.proto+"/"+c.compression, func(t *testing.T) {
			r := otlptest.Start(t)
			if c.proto == "grpc" {
				r.UseGRPC(t)
			} else {
				r.UseHTTP(t)
			}
			t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", c.compression)
			shutdown, err := otlp.Setup(context.Background(), otlp.Config{Service: "myelin-test"})
			if err != nil {
				t.Fatalf("Setup: %v", err)
			}
			if !telemetry.On() {
				t.Fatal("telemetry is off with OTEL_EXPORTER_OTLP_ENDPOINT set")
			}
			_, span := otel.Tracer("t").Start(context.Background(), "probe")
			span.End()
			h, _ := otel.Meter("t").Int64Histogram("probe.size")
			h.Record(context.Background(), 7)
			if err := shutdown(context.Background()); err != nil {
				t.Fatalf("shutdown: %v", err)
			}
			if telemetry.On() {
				t.Error("telemetry is still on after its shutdown")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			got, err := r.WaitSpan(ctx, "probe")
			if err != nil {
				t.Fatal(err)
			}
			if got.Resource["service.name"] != "myelin-test" {
				t.Errorf("service.name = %v, want myelin-test (Config.Service)", got.Resource["service.name"])
			}
			pts, err := r.WaitMetric(ctx, "probe.size")
			if err != nil {
				t.Fatal(err)
			}
			if pts[0].Count != 1 || pts[0].Sum != 7 {
				t.Errorf("probe.size point = %+v, want one record of 7", pts[0])
			}
		})
	}
}

func TestOTELServiceNameWinsOverTheDefault(t *testing.T) {
	r := otlptest.Start(t)
	r.UseHTTP(t)
	t.Setenv("OTEL_SERVICE_NAME", "billing-agents")
	shutdown, err := otlp.Setup(context.Background(), otlp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	_, span := otel.Tracer("t").Start(context.Background(), "probe")
	span.End()
	shutdown(context.Background())
	got, err := r.WaitSpan(context.Background(), "probe")
	if err != nil {
		t.Fatal(err)
	}
	if got.Resource["service.name"] != "billing-agents" {
		t.Errorf("service.name = %v, want OTEL_SERVICE_NAME's billing-agents", got.Resource["service.name"])
	}
}

func TestAnUnsupportedExporterOrProtocolIsAnErrorNamingIt(t *testing.T) {
	for _, c := range []struct{ key, value string }{
		{"OTEL_TRACES_EXPORTER", "zipkin"},
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"},
		{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "udp"},
	} {
		t.Run(c.key, func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
			t.Setenv(c.key, c.value)
			_, err := otlp.Setup(context.Background(), otlp.Config{})
			if err == nil || !strings.Contains(err.Error(), c.key) || !strings.Contains(err.Error(), c.value) {
				t.Fatalf("Setup with %s=%s: err = %v, want one naming the variable and its value", c.key, c.value, err)
			}
			if telemetry.On() {
				t.Error("telemetry is on after a failed Setup")
			}
		})
	}
}

func TestOTELSDKDisabledTurnsTelemetryOff(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_SDK_DISABLED", "true")
	setup(t)
	if telemetry.On() {
		t.Fatal("telemetry is on with OTEL_SDK_DISABLED=true")
	}
}

// With one signal exported and not the other, Setup writes nothing on
// stderr (OpenTelemetry's log): traces alone (an endpoint for traces only,
// or OTEL_METRICS_EXPORTER=none) installed the global meter provider as
// itself, which OpenTelemetry reports as an error ("no delegate configured
// in meter provider") on every `myelin run`. Each case runs in a process
// of its own: the globals a Setup before it set would hide it.
func TestSetupOfOneSignalWritesNothingOnStderr(t *testing.T) {
	if only := os.Getenv("MYELIN_TEST_SETUP_ONLY"); only != "" {
		shutdown, err := otlp.Setup(context.Background(), otlp.Config{Service: "myelin-test"})
		if err != nil {
			t.Fatalf("Setup: %v", err)
		}
		if !telemetry.On() {
			t.Fatalf("telemetry is off with only %s exported", only)
		}
		_ = shutdown(context.Background())
		return
	}
	for _, only := range []string{"traces", "metrics"} {
		t.Run(only, func(t *testing.T) {
			r := otlptest.Start(t)
			r.UseHTTP(t)
			off := "OTEL_TRACES_EXPORTER=none"
			if only == "traces" {
				off = "OTEL_METRICS_EXPORTER=none"
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestSetupOfOneSignalWritesNothingOnStderr$", "-test.count=1")
			cmd.Env = append(os.Environ(), "MYELIN_TEST_SETUP_ONLY="+only, off)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("the process setting up %s alone: %v\n%s", only, err, stderr.String())
			}
			if stderr.Len() > 0 {
				t.Errorf("Setup of %s alone wrote on stderr:\n%s", only, stderr.String())
			}
		})
	}
}

// An endpoint that is no http(s) URL, or resource attributes that are not
// key=value pairs, are errors naming the variable and its value: the
// exporters would otherwise log a "parse url" line on stderr and send to
// their default, localhost, with Setup saying nothing — the spans of a
// collector elsewhere silently lost.
func TestABadEndpointOrResourceIsAnErrorNamingIt(t *testing.T) {
	for _, c := range []struct{ key, value string }{
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "collector.internal:4318"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "127.0.0.1:4318"},
		{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "ftp://collector.internal"},
		{"OTEL_RESOURCE_ATTRIBUTES", "team"},
	} {
		t.Run(c.key, func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
			t.Setenv(c.key, c.value)
			shutdown, err := otlp.Setup(context.Background(), otlp.Config{})
			if err == nil {
				shutdown(context.Background())
			}
			if err == nil || !strings.Contains(err.Error(), c.key) || !strings.Contains(err.Error(), c.value) {
				t.Fatalf("Setup with %s=%s: err = %v, want one naming the variable and its value", c.key, c.value, err)
			}
			if telemetry.On() {
				t.Error("telemetry is on after a failed Setup")
			}
		})
	}
}
