// Package otlp sets myelin's telemetry up from the standard OTEL_*
// environment: the OpenTelemetry SDK's tracer and meter providers,
// exporting over OTLP (HTTP or gRPC), installed as OpenTelemetry's globals
// and as package telemetry's (telemetry.Use), with the W3C trace-context
// propagator. It is what `myelin run`, `chat` and `serve` call at start
// (docs/telemetry.md).
//
// The exporters are myelin's own: internal/otlpwire writes the OTLP
// protobuf bytes, internal/collector sends them over http/protobuf or
// gRPC (HTTP/2 through net/http), both held by tests to the official Go
// exporters, which this package must not link again (they bring gRPC-Go
// and the protobuf runtime into every start: docs/telemetry.md, "What
// goes on the wire").
//
// It must be the only package that links the SDK and the exporters, so
// that code using package telemetry alone stays light, and it must leave
// telemetry off when the environment names no exporter.
package otlp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/myelin-run/myelin/telemetry"
	"github.com/myelin-run/myelin/telemetry/otlp/internal/collector"
	"github.com/myelin-run/myelin/telemetry/otlp/internal/otlpwire"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Config is what Setup takes besides the environment. Its zero value
// names the service "myelin".
type Config struct {
	// Service is service.name when OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES do not say; "" means "myelin".
	Service string
}

// Setup reads the OTEL_* environment of the process and, when it names an exporter,
// installs tracer and meter providers exporting over OTLP, and the W3C
// trace-context propagator, as OpenTelemetry's globals and package
// telemetry's.
// Traces are on when OTEL_TRACES_EXPORTER is "otlp", or when it is unset
// and OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is
// set; metrics the same with the METRICS variables. The protocol is
// OTEL_EXPORTER_OTLP_{TRACES,METRICS}_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL:
// "http/protobuf" (the default) or "grpc". OTEL_SDK_DISABLED=true turns
// everything off.
//
// With nothing named it installs nothing, telemetry stays off, and the
// shutdown it returns does nothing. An unsupported exporter or protocol
// is an error that names the variable and its value. The shutdown flushes
// what is pending, within ctx, and puts back what telemetry had before
// (off, unless something else was installed).
func Setup(ctx context.Context, c Config) (shutdown func(context.Context) error, err error) {
	getenv := os.Getenv
	nothing := func(context.Context) error { return nil }
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return nothing, nil
	}
	traces, err := wanted(getenv, "TRACES")
	if err != nil {
		return nothing, err
	}
	metrics, err := wanted(getenv, "METRICS")
	if err != nil {
		return nothing, err
	}
	if !traces && !metrics {
		return nothing, nil
	}
	service := c.Service
	if service == "" {
		service = "myelin"
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over ours
	res, err := resource.New(ctx, resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName(service)), resource.WithFromEnv())
	if err != nil {
		return nothing, fmt.Errorf("telemetry: the resource (OTEL_SERVICE_NAME=%q, OTEL_RESOURCE_ATTRIBUTES=%q: comma-separated key=value pairs): %w",
			getenv("OTEL_SERVICE_NAME"), getenv("OTEL_RESOURCE_ATTRIBUTES"), err)
	}
	var tp trace.TracerProvider = noop.NewTracerProvider()
	var ends []func(context.Context) error
	if traces {
		exp, err := traceExporter(getenv)
		if err != nil {
			return nothing, err
		}
		sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		tp = sdk
		ends = append(ends, sdk.Shutdown)
	}
	var mp metric.MeterProvider
	if metrics {
		exp, err := metricExporter(getenv)
		if err != nil {
			return nothing, errors.Join(err, shutdownAll(ctx, ends))
		}
		sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(res))
		mp = sdk
		ends = append(ends, sdk.Shutdown)
	} else {
		// a no-op of its own: the global one, installed back as itself,
		// is an error OpenTelemetry logs on stderr
		mp = metricnoop.NewMeterProvider()
	}
	restore, err := telemetry.Use(tp, mp, strings.EqualFold(getenv(telemetry.CaptureContentEnv), "true"))
	if err != nil {
		return nothing, errors.Join(fmt.Errorf("telemetry: the instruments: %w", err), shutdownAll(ctx, ends))
	}
	otel.SetTracerProvider(tp)
	otel.SetMeterProvider(mp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return func(ctx context.Context) error {
		restore()
		return shutdownAll(ctx, ends)
	}, nil
}

// wanted reports whether signal ("TRACES" or "METRICS") is to be
// exported, by OTEL_<signal>_EXPORTER or an OTLP endpoint.
func wanted(getenv func(string) string, signal string) (bool, error) {
	name := "OTEL_" + signal + "_EXPORTER"
	switch v := strings.TrimSpace(strings.ToLower(getenv(name))); v {
	case "otlp":
		return true, nil
	case "none":
		return false, nil
	case "":
		return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != "", nil
	default:
		return false, fmt.Errorf("telemetry: %s=%q: myelin exports only over OTLP (\"otlp\") or not at all (\"none\")", name, getenv(name))
	}
}

// protocol is the OTLP protocol of signal: "grpc" or "http/protobuf".
func protocol(getenv func(string) string, signal string) (string, error) {
	name := "OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"
	v := getenv(name)
	if v == "" {
		name = "OTEL_EXPORTER_OTLP_PROTOCOL"
		v = getenv(name)
	}
	switch strings.TrimSpace(strings.ToLower(v)) {
	case "", "http/protobuf":
		return "http/protobuf", nil
	case "grpc":
		return "grpc", nil
	default:
		return "", fmt.Errorf("telemetry: %s=%q: the protocols are \"http/protobuf\" and \"grpc\"", name, v)
	}
}

// client is the collector client of signal (collector.Traces or
// collector.Metrics) over the protocol the environment names, read from
// the OTEL_EXPORTER_OTLP_* variables as the official exporters read them.
func client(getenv func(string) string, signal string) (*collector.Client, error) {
	p, err := protocol(getenv, strings.ToUpper(signal))
	if err != nil {
		return nil, err
	}
	cfg, err := collector.FromEnv(getenv, os.ReadFile, signal, p)
	if err != nil {
		return nil, fmt.Errorf("telemetry: the OTLP %s exporter (%s): %w", signal, p, err)
	}
	c, err := collector.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("telemetry: the OTLP %s exporter (%s): %w", signal, p, err)
	}
	return c, nil
}

func traceExporter(getenv func(string) string) (sdktrace.SpanExporter, error) {
	c, err := client(getenv, collector.Traces)
	if err != nil {
		return nil, err
	}
	return collector.NewSpanExporter(c, otlpwire.AppendSpans, otlpwire.ReadPartialSuccess), nil
}

func metricExporter(getenv func(string) string) (sdkmetric.Exporter, error) {
	c, err := client(getenv, collector.Metrics)
	if err != nil {
		return nil, err
	}
	return collector.NewMetricExporter(c, otlpwire.AppendMetrics, otlpwire.ReadPartialSuccess), nil
}

func shutdownAll(ctx context.Context, ends []func(context.Context) error) error {
	var errs []error
	for _, end := range ends {
		if err := end(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("telemetry: flushing what was pending: %w", err)
	}
	return nil
}
