package awslogin

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The keys in testdata are test keys made for these tests only:
// p256.pem has no coordinate with a leading zero byte, p256-short-x.pem has
// an X whose first byte is zero (big.Int.Bytes drops it), p384.pem is on
// the wrong curve for ES256.
var keyFiles = map[string]string{
	"@DPOPKEY@":   "p256.pem",
	"@SHORTXKEY@": "p256-short-x.pem",
	"@P384KEY@":   "p384.pem",
}

// fixture is testdata/cache/name with its key placeholders replaced by the
// PEM of the test keys, as JSON strings.
func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "cache", name))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for placeholder, file := range keyFiles {
		if !strings.Contains(s, placeholder) {
			continue
		}
		pemText := readKeyPEM(t, file)
		quoted, err := json.Marshal(pemText)
		if err != nil {
			t.Fatal(err)
		}
		s = strings.ReplaceAll(s, `"`+placeholder+`"`, string(quoted))
	}
	return []byte(s)
}

func readKeyPEM(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// publicKeyOf is the uncompressed public point of a testdata key.
func publicKeyOf(t *testing.T, file string) []byte {
	t.Helper()
	block, _ := pem.Decode([]byte(readKeyPEM(t, file)))
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	b, err := key.PublicKey.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// answer is what the fake sign-in service says to one request.
type answer struct {
	status    int
	errorType string // X-Amzn-ErrorType, when set
	body      string
	skew      time.Duration // the fake's clock ahead of ours, in its Date
}

// seenRequest is what the fake saw of one request, the DPoP proof checked
// with the public key its header carries.
type seenRequest struct {
	method, path, query, contentType, body string
	authorization                          string // anonymous: none
	dpopParts                              int
	dpopHeader                             string // the proof's first segment, as sent
	header                                 dpopHeader
	claims                                 dpopClaims
	publicKey                              []byte // 0x04 || X || Y, coordinates left-padded
	signatureVerifies                      bool
}

// fakeSignin is the sign-in service's CreateOAuth2Token on loopback: it
// answers the requests in turn with answers (the last one repeats).
type fakeSignin struct {
	answers []answer
	mu      sync.Mutex
	seen    []seenRequest
}

func (f *fakeSignin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s := seenRequest{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, contentType: r.Header.Get("Content-Type"), body: string(body), authorization: r.Header.Get("Authorization")}
	checkDPoP(&s, r.Header.Get("DPoP"))
	f.mu.Lock()
	n := len(f.seen)
	f.seen = append(f.seen, s)
	f.mu.Unlock()

	a := answer{status: http.StatusNotFound, body: `{"__type":"ResourceNotFoundException"}`}
	if len(f.answers) > 0 {
		a = f.answers[min(n, len(f.answers)-1)]
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Date", time.Now().Add(a.skew).UTC().Format(http.TimeFormat))
	if a.errorType != "" {
		w.Header().Set("X-Amzn-ErrorType", a.errorType)
	}
	w.WriteHeader(a.status)
	io.WriteString(w, a.body)
}

func (f *fakeSignin) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.seen...)
}

// checkDPoP decodes a proof and verifies its ES256 signature with the key
// in its own header, as a server does before comparing that key with the
// one bound to the refresh token.
func checkDPoP(s *seenRequest, proof string) {
	parts := strings.Split(proof, ".")
	s.dpopParts = len(parts)
	if len(parts) != 3 {
		return
	}
	s.dpopHeader = parts[0]
	if !decodeSegment(parts[0], &s.header) || !decodeSegment(parts[1], &s.claims) {
		return
	}
	x, errX := base64.RawURLEncoding.DecodeString(s.header.JWK.X)
	y, errY := base64.RawURLEncoding.DecodeString(s.header.JWK.Y)
	if errX != nil || errY != nil || len(x) > 32 || len(y) > 32 {
		return
	}
	point := make([]byte, 65)
	point[0] = 4
	copy(point[1+32-len(x):33], x)
	copy(point[33+32-len(y):], y)
	s.publicKey = point
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), point)
	if err != nil {
		return
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	r, sv := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	s.signatureVerifies = ecdsa.Verify(pub, digest[:], r, sv)
}

func decodeSegment(seg string, v any) bool {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	return err == nil && json.Unmarshal(b, v) == nil
}
