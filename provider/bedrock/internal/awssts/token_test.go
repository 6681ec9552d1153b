package awssts

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider/bedrock/internal/awscall"
)

// TestAWebIdentityTokenFileIsBounded pins that a token file of up to
// 1 MiB is sent whole and a larger one is refused with an error naming
// the file and the bound, before anything is sent (the SDK reads any
// size).
func TestAWebIdentityTokenFileIsBounded(t *testing.T) {
	for _, c := range []struct {
		name string
		size int
		sent bool
	}{
		{"a JWT of a few KiB", 3 << 10, true},
		{"exactly 1 MiB", maxTokenSize, true},
		{"one byte over 1 MiB", maxTokenSize + 1, false},
		{"10 MiB", 10 << 20, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "token")
			token := bytes.Repeat([]byte("e"), c.size)
			if err := os.WriteFile(file, token, 0o600); err != nil {
				t.Fatal(err)
			}
			f := newFakeSTS(t, []reply{{status: 200, body: "@web_identity.xml"}})
			client := Client{Client: awscall.Client{HTTPClient: f.srv.Client(), Endpoint: f.srv.URL}}
			if !c.sent {
				client.HTTPClient = &http.Client{Transport: noTransport{t}}
			}
			_, err := NewWebIdentity(client, WebIdentityOptions{RoleARN: roleARN, TokenFile: file}).Retrieve(context.Background())
			if c.sent {
				if err != nil {
					t.Fatalf("Retrieve: %v", err)
				}
				f.mu.Lock()
				defer f.mu.Unlock()
				if len(f.seen) != 1 || f.seen[0].Form.Get("WebIdentityToken") != string(token) {
					t.Errorf("the token was not sent whole")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "more than 1048576 bytes") {
				t.Errorf("error %v, want one naming %s and the bound", err, file)
			}
		})
	}
}
