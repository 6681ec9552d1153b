package googlecloud

import (
	"net/http"
	"testing"

	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
)

// BenchmarkCompleteAt10kMessages compares one whole request of 10,000
// messages (about 6.5 MB) on the first-party wire and through the Google
// Cloud gateway, answered in process: the gateway's options route the
// request and add a token, and must not touch the body.
func BenchmarkCompleteAt10kMessages(b *testing.B) {
	req := providertest.LongRequest(10000)
	client := &http.Client{Transport: providertest.Answering{}}
	first, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: "http://127.0.0.1:1", HTTPClient: client, NoStream: true, MaxRetries: -1})
	if err != nil {
		b.Fatal(err)
	}
	gateway, err := New(Config{Config: anthropic.Config{HTTPClient: client, NoStream: true, MaxRetries: -1}, Project: "p", WorkspaceID: "w", Credentials: staticToken("")})
	if err != nil {
		b.Fatal(err)
	}
	providertest.BenchComplete(b, req, providertest.Named{Name: "anthropic", P: first}, providertest.Named{Name: "google-cloud", P: gateway})
}
