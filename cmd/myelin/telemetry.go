package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/myelin-run/myelin/telemetry/otlp"
)

// flushTimeout bounds how long a command that ends waits for its spans
// and metrics to reach the collector: one that is down must not hold the
// exit.
const flushTimeout = 5 * time.Second

// startTelemetry sets telemetry up from the OTEL_* environment for a
// command that runs turns (run, chat, serve; docs/cli.md) and returns
// what flushes it as the command ends, within flushTimeout, saying on
// stderr what it could not send. A bad OTEL_* value is an error naming
// the variable; with none set it does nothing and costs nothing.
func startTelemetry(ctx context.Context, cmd string, stderr io.Writer) (flush func(), err error) {
	shutdown, err := otlp.Setup(ctx, otlp.Config{})
	if err != nil {
		return func() {}, fmt.Errorf("%w; fix or unset the variable (docs/cli.md, OpenTelemetry)", err)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			fmt.Fprintf(stderr, "myelin %s: %v\n", cmd, err)
		}
	}, nil
}
