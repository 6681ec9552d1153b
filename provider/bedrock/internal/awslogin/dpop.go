package awslogin

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"time"
)

// p256Size is the byte length of a P-256 coordinate and of each of the
// signature's r and s.
const p256Size = 32

// dpopKey reads the cache's dpopKey: a PEM "EC PRIVATE KEY" (SEC 1) on
// P-256, the only curve ES256 names. Errors say what is wrong, never the
// key.
func dpopKey(pemText string) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode([]byte(pemText))
	if block == nil {
		// The SDK dereferences the nil block and panics.
		return nil, errors.New("dpopKey holds no PEM block")
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse ec private key: %w", err)
	}
	if key.Curve != elliptic.P256() {
		// The SDK would sign with it under a P-256 header, or panic.
		return nil, fmt.Errorf("dpopKey is on %s, not P-256", key.Curve.Params().Name)
	}
	return key, nil
}

// dpopJWK is the public key in the proof's header (RFC 7517, 7518 §6.2.1).
type dpopJWK struct {
	Kty string `json:"kty"`
	X   string `json:"x"`
	Y   string `json:"y"`
	Crv string `json:"crv"`
}

type dpopHeader struct {
	Typ string  `json:"typ"`
	Alg string  `json:"alg"`
	JWK dpopJWK `json:"jwk"`
}

type dpopClaims struct {
	JTI string `json:"jti"`
	HTM string `json:"htm"`
	HTU string `json:"htu"`
	IAT int64  `json:"iat"`
}

// dpopProof is the DPoP header value (RFC 9449) for a POST to htu: a JWT
// signed ES256 with key, its header carrying the public key, its claims a
// random jti, the method, the URL and the time. Header and claims are
// JSON indented by two spaces, as the SDK writes them.
func dpopProof(key *ecdsa.PrivateKey, htu string, now time.Time) (string, error) {
	pub, err := key.PublicKey.Bytes() // 0x04 || X || Y
	if err != nil {
		return "", fmt.Errorf("dpop public key: %w", err)
	}
	if len(pub) != 1+2*p256Size {
		return "", fmt.Errorf("dpop public key: %d bytes, want %d", len(pub), 1+2*p256Size)
	}
	jti, err := randomUUID()
	if err != nil {
		return "", fmt.Errorf("dpop jti: %w", err)
	}
	header, err := jwtPart(dpopHeader{
		Typ: "dpop+jwt",
		Alg: "ES256",
		JWK: dpopJWK{
			Kty: "EC",
			X:   base64.RawURLEncoding.EncodeToString(pub[1 : 1+p256Size]),
			Y:   base64.RawURLEncoding.EncodeToString(pub[1+p256Size:]),
			Crv: "P-256",
		},
	})
	if err != nil {
		return "", err
	}
	claims, err := jwtPart(dpopClaims{JTI: jti, HTM: "POST", HTU: htu, IAT: now.Unix()})
	if err != nil {
		return "", err
	}
	signed := header + "." + claims
	digest := sha256.Sum256([]byte(signed))
	r, s, err := ecdsa.Sign(rand.Reader, key, digest[:])
	if err != nil {
		return "", fmt.Errorf("dpop sign: %w", err)
	}
	// JWS ES256: r and s, each left-padded to the coordinate size (RFC 7518 §3.4).
	sig := make([]byte, 2*p256Size)
	r.FillBytes(sig[:p256Size])
	s.FillBytes(sig[p256Size:])
	return signed + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

func jwtPart(v any) (string, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "", fmt.Errorf("dpop: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// randomUUID is a version 4 UUID (RFC 9562) in its usual text form.
func randomUUID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}
