package bedrock

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
)

// TestNoSpanRecordsAnAnswerNothingSent: a whole answer's request whose
// credentials cannot be had is ended without an answer being made up for
// the SDK's retry loop (a review found a 401 recorded in the SDK's span of
// the call, though nothing was sent: myelin sets the global tracer
// provider when OTEL_* is set).
func TestNoSpanRecordsAnAnswerNothingSent(t *testing.T) {
	hermetic(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	old := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(old) })
	srv := providertest.NewBedrock(t, providertest.Step{Text: "never"})
	s, client := providertest.Tap(t, srv)
	creds := &countedCredentials{err: errors.New("no EC2 IMDS role found")}
	p, err := New(Config{Config: anthropic.Config{HTTPClient: client, MaxRetries: 2, NoStream: true}, AWS: &aws.Config{Region: "us-east-1", Credentials: creds}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = p.Complete(context.Background(), providertest.SampleRequest(), nil); !errors.Is(err, creds.err) {
		t.Fatalf("Complete: %v, want the credentials' error", err)
	}
	if n := s.Count(); n != 0 {
		t.Fatalf("%d requests reached Bedrock", n)
	}
	if len(rec.Ended()) == 0 {
		t.Fatal("no span: the test sees nothing")
	}
	for _, sp := range rec.Ended() {
		for _, kv := range sp.Attributes() {
			if kv.Key == "http.response.status_code" {
				t.Errorf("span %q records an answer of %s; nothing was sent", sp.Name(), kv.Value.Emit())
			}
		}
	}
}
