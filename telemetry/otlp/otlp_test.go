package otlp_test

import (
	"context"
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
	for _, proto := range []string{"http/protobuf", "grpc"} {
		t.Run(proto, func(t *testing.T) {
			r := otlptest.Start(t)
			if proto == "grpc" {
				r.UseGRPC(t)
			} else {
				r.UseHTTP(t)
			}
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
