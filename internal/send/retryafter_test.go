package send

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfterReadsEveryHTTPDateForm(t *testing.T) {
	now := time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC)
	at := now.Add(30 * time.Second)
	for _, tc := range []struct{ form, value string }{
		{"IMF-fixdate", at.Format(http.TimeFormat)},
		{"RFC 850", at.Format("Monday, 02-Jan-06 15:04:05 GMT")},
		{"asctime", at.Format(time.ANSIC)},
		{"RFC 1123 with another zone's name", at.In(time.FixedZone("UTC", 0)).Format(time.RFC1123)},
	} {
		t.Run(tc.form, func(t *testing.T) {
			for _, limit := range []time.Duration{0, time.Hour} {
				s := &Sender{rules: Rules{RetryAfterLimit: limit}, now: func() time.Time { return now }}
				res := &http.Response{Header: http.Header{"Retry-After": {tc.value}}}
				d, ok, tooLong := s.retryAfter(res)
				if !ok || tooLong || d != 30*time.Second {
					t.Fatalf("retry-after %q (limit %v) = %v ok=%v tooLong=%v, want 30s ok", tc.value, limit, d, ok, tooLong)
				}
			}
		})
	}
}
