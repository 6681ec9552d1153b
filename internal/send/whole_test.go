package send

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// PostWhole reads the body of the answer that ends the call inside the
// retries: one that breaks off is sent again where the rules retry a
// dropped body (anthropic-sdk-go's), its read's error ending the call
// where they do not (openai-go's) or once they are spent; the answer
// returned holds its body read.
func TestAWholeAnswerIsReadInsideTheRetries(t *testing.T) {
	ok := answer{status: 200, body: `{"ok":true}`}
	cut := answer{status: 200, cut: true}
	for _, tc := range []struct {
		name     string
		rules    Rules
		answers  []answer
		attempts int
		err      string // "" for the answer's body
	}{
		{"anthropic's: a cut answer sent again", Anthropic(2), []answer{cut, ok}, 2, ""},
		{"anthropic's: cut every time", Anthropic(2), []answer{cut}, 3, "error reading response body: unexpected EOF"},
		{"anthropic's: told not to retry", Anthropic(2), []answer{{status: 200, cut: true, header: map[string]string{"x-should-retry": "false"}}, ok}, 1, "error reading response body: unexpected EOF"},
		{"openai's: a cut answer ends the call", OpenAI(2), []answer{cut, ok}, 1, "unexpected EOF"},
		{"a whole answer read", Anthropic(2), []answer{ok}, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &script{answers: tc.answers}
			srv := httptest.NewServer(sc)
			defer srv.Close()
			var waits []time.Duration
			s := newSender(t, srv.URL, tc.rules, &waits)
			res, err := s.PostWhole(context.Background(), []byte(`{}`), nil)
			if len(sc.counts) != tc.attempts {
				t.Errorf("%d attempts, want %d", len(sc.counts), tc.attempts)
			}
			if tc.err != "" {
				if err == nil || !strings.HasSuffix(err.Error(), tc.err) {
					t.Fatalf("err %v, want one ending %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			if string(b) != `{"ok":true}` {
				t.Fatalf("the answer's body reads %q", b)
			}
		})
	}
}
