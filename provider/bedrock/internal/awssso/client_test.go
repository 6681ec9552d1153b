package awssso

import (
	"net/http"
	"testing"
)

// TestServiceErrorCodeAndMessageAreRead pins where an error answer's code
// and message are read from: the X-Amzn-Errortype header before the
// body's __type, then its code, namespaces and suffixes cut; message, Message,
// then SSO-OIDC's error_description and error.
func TestServiceErrorCodeAndMessageAreRead(t *testing.T) {
	cases := []struct {
		name, header, body, code, message string
	}{
		{"header with a suffix", "UnauthorizedException:http://internal.amazon.com/coral/", `{"message":"m"}`, "UnauthorizedException", "m"},
		{"header before the body", "InvalidGrantException", `{"__type":"Other","error_description":"d"}`, "InvalidGrantException", "d"},
		{"__type with a namespace", "", `{"__type":"com.amazonaws.sso#TooManyRequestsException","Message":"M"}`, "TooManyRequestsException", "M"},
		{"__type before code", "", `{"code":"Other","__type":"RequestTimeout","message":"m"}`, "RequestTimeout", "m"},
		{"code when no __type", "", `{"code":"RequestTimeout","message":"m"}`, "RequestTimeout", "m"},
		{"OAuth error only", "", `{"error":"invalid_client"}`, "", "invalid_client"},
		{"message before error_description", "", `{"message":"m","error_description":"d"}`, "", "m"},
		{"body not JSON", "", `<html>bad gateway</html>`, "", ""},
		{"empty body", "", ``, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: 400, Header: http.Header{}}
			if c.header != "" {
				resp.Header.Set("X-Amzn-Errortype", c.header)
			}
			e := decodeAPIError("sso", "GetRoleCredentials", resp, []byte(c.body))
			if e.ErrorCode() != c.code || e.ErrorMessage() != c.message {
				t.Errorf("code %q message %q, want %q %q", e.ErrorCode(), e.ErrorMessage(), c.code, c.message)
			}
		})
	}
}
