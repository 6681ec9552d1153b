package oauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"
)

// assertionLife is how long a client assertion is good for.
const assertionLife = 5 * time.Minute

// signingKey is a client's private key and the JWS algorithm it signs
// with.
type signingKey struct {
	alg string // ES256 or RS256
	ec  *ecdsa.PrivateKey
	rsa *rsa.PrivateKey
}

// parseKey reads a PEM private key (PKCS #8, SEC 1 or PKCS #1) for alg
// (ES256 for a P-256 key, RS256 for an RSA key; from the key when empty).
// Its errors never quote the key.
func parseKey(pemText, alg string) (*signingKey, error) {
	block, _ := pem.Decode([]byte(strings.TrimSpace(pemText)))
	if block == nil {
		return nil, errors.New("not a PEM private key")
	}
	var key any
	var err error
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the %s block: %w", block.Type, err)
	}
	k := &signingKey{alg: strings.ToUpper(alg)}
	switch key := key.(type) {
	case *ecdsa.PrivateKey:
		if key.Curve != elliptic.P256() {
			return nil, errors.New("an EC key must be on P-256 (ES256)")
		}
		k.ec = key
		if k.alg == "" {
			k.alg = "ES256"
		}
	case *rsa.PrivateKey:
		k.rsa = key
		if k.alg == "" {
			k.alg = "RS256"
		}
	default:
		return nil, fmt.Errorf("a %T key is not one myelin signs with (P-256 EC, RSA)", key)
	}
	if (k.alg == "ES256") != (k.ec != nil) || (k.alg != "ES256" && k.alg != "RS256") {
		return nil, fmt.Errorf("signingAlg %s does not fit the key", k.alg)
	}
	return k, nil
}

// assertion is a client assertion JWT (RFC 7523 §3): issued by and about
// the client, for audience (the authorisation server), good for minutes,
// with a unique id.
func (k *signingKey) assertion(clientID, audience string) (string, error) {
	now := time.Now()
	header, _ := json.Marshal(map[string]string{"alg": k.alg, "typ": "JWT"})
	claims, _ := json.Marshal(map[string]any{
		"iss": clientID, "sub": clientID, "aud": audience,
		"iat": now.Unix(), "exp": now.Add(assertionLife).Unix(), "jti": rand.Text(),
	})
	enc := base64.RawURLEncoding
	input := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	sum := sha256.Sum256([]byte(input))
	var sig []byte
	if k.ec != nil {
		r, s, err := ecdsa.Sign(rand.Reader, k.ec, sum[:])
		if err != nil {
			return "", fmt.Errorf("signing the client assertion: %w", err)
		}
		sig = make([]byte, 64) // JWS wants r and s, 32 bytes each (RFC 7518 §3.4)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
	} else {
		var err error
		sig, err = rsa.SignPKCS1v15(rand.Reader, k.rsa, crypto.SHA256, sum[:])
		if err != nil {
			return "", fmt.Errorf("signing the client assertion: %w", err)
		}
	}
	return input + "." + enc.EncodeToString(sig), nil
}
