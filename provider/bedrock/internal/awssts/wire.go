package awssts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/smithy-go"

	"github.com/myelin-run/myelin/provider/bedrock/internal/awscall"
)

// apiVersion is STS's query API version.
const apiVersion = "2011-06-15"

// signFunc prepares a request's authentication, dated at.
type signFunc func(ctx context.Context, req *http.Request, body []byte, at time.Time) error

// operation is one STS action as a provider sends it.
type operation struct {
	form url.Values
	// sign signs the request; nil sends it unsigned.
	sign signFunc
	// result is the answer's element holding the credentials.
	result string
	// retryCode says which error codes of this action are retried
	// besides the standard retryer's.
	retryCode func(code string) bool
	// errorType is the code as the SDK's error type of this action
	// spells it, if the code (in any case) has one.
	errorType func(code string) (string, bool)
	// skew is how far ahead of this machine's clock STS's was at the
	// last call (from its Date header), kept across calls as the SDK's
	// client keeps it, added to the signing time.
	skew *atomic.Int64
}

// call sends op to STS through awscall (attempts, waits and the
// clock-skew retry as the SDK's client makes them) and reads the
// credentials in the answer.
func (c Client) call(ctx context.Context, op operation) (aws.Credentials, error) {
	body := []byte(op.form.Encode())
	answer, err := c.Do(ctx, awscall.Call{
		Service: "STS", Operation: op.form.Get("Action"),
		Request: func(ctx context.Context, target string, at time.Time) (*http.Request, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
			if err != nil {
				return nil, err
			}
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if op.sign != nil {
				if err := op.sign(ctx, req, body, at); err != nil {
					return nil, err
				}
			}
			return req, nil
		},
		DecodeError: func(status int, _ http.Header, body []byte) error {
			e, err := readError(body, status, op.errorType)
			if err != nil {
				return err
			}
			return e
		},
		Retryable: op.retryCode,
		Skew:      op.skew,
	})
	if err != nil {
		return aws.Credentials{}, err
	}
	creds, err := readCredentials(answer, op.result)
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("STS's answer: %w", err)
	}
	return creds, nil
}

// signV4 signs req with creds for STS in region, as the SDK's client does
// (the payload's SHA-256 in the signature, no X-Amz-Content-Sha256
// header; a session token in X-Amz-Security-Token).
func signV4(ctx context.Context, req *http.Request, body []byte, creds aws.Credentials, region string, at time.Time) error {
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "sts", region, at); err != nil {
		return fmt.Errorf("signing the STS request: %w", err)
	}
	return nil
}

// apiError is STS's ErrorResponse: its code and message, the HTTP status
// and the request's id. It is a smithy.APIError, as the SDK's errors are.
type apiError struct {
	Code, Message, RequestID string
	Status                   int
	fault                    smithy.ErrorFault
}

func (e *apiError) Error() string {
	s := fmt.Sprintf("STS error %s (HTTP %d)", e.Code, e.Status)
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.RequestID != "" {
		s += " (request id " + e.RequestID + ")"
	}
	return s
}

// ErrorCode is STS's error code, spelled as the SDK's error type spells
// it when the action has a type for it.
func (e *apiError) ErrorCode() string { return e.Code }

// ErrorMessage is STS's message.
func (e *apiError) ErrorMessage() string { return e.Message }

// ErrorFault is the client's for the codes the SDK has a type for (all
// its STS error types are), unknown for the others, as the SDK's generic
// error says.
func (e *apiError) ErrorFault() smithy.ErrorFault { return e.fault }

var _ smithy.APIError = (*apiError)(nil)

// readError reads an ErrorResponse (ROOT/Error/{Code,Message},
// ROOT/RequestId; names as written) as the SDK's STS client does: a code
// the action has an error type for (errorType) is spelled as the type
// spells it, its message as sent; another code is kept as sent, its
// message UnknownError when none came (as the code of an empty body).
func readError(data []byte, status int, errorType func(string) (string, bool)) (*apiError, error) {
	var doc struct {
		Code      string `xml:"Error>Code"`
		Message   string `xml:"Error>Message"`
		RequestID string `xml:"RequestId"`
	}
	if err := xml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil && err != io.EOF {
		return nil, fmt.Errorf("STS failed (HTTP %d) with an answer that is not an error response: %w", status, err)
	}
	e := &apiError{Code: doc.Code, Message: doc.Message, RequestID: doc.RequestID, Status: status}
	if errorType != nil {
		if code, ok := errorType(e.Code); ok {
			e.Code, e.fault = code, smithy.FaultClient
			return e, nil
		}
	}
	if e.Code == "" {
		e.Code = "UnknownError"
	}
	if e.Message == "" {
		e.Message = "UnknownError"
	}
	return e, nil
}

// oneOf is the name of names that code is, whatever its case.
func oneOf(code string, names ...string) (string, bool) {
	for _, n := range names {
		if strings.EqualFold(code, n) {
			return n, true
		}
	}
	return "", false
}

// readCredentials reads ROOT/RESULT/Credentials and
// ROOT/RESULT/AssumedRoleUser/Arn of a successful answer as the SDK's STS
// deserializer reads them: element names in any case; the members of
// RESULT in document order, the last value of a repeated member kept and
// a repeated Credentials or AssumedRoleUser merged into the first; a
// member that holds more than text, an integer member that is not one,
// or an Expiration that is not a time failing the answer. The document
// is read up to the end of RESULT only. An empty answer has no
// credentials.
func readCredentials(data []byte, result string) (aws.Credentials, error) {
	d := xml.NewDecoder(bytes.NewReader(data))
	root, err := nextStart(d)
	if err == io.EOF {
		if len(bytes.TrimSpace(data)) > 0 {
			return aws.Credentials{}, errors.New("the answer is not XML")
		}
		return aws.Credentials{}, errors.New("the answer is empty")
	}
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("the answer is not XML: %w", err)
	}
	for {
		tok, err := d.Token()
		if err != nil {
			return aws.Credentials{}, fmt.Errorf("reading the answer's %s: %w", result, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if !strings.EqualFold(t.Name.Local, result) {
				if err := d.Skip(); err != nil {
					return aws.Credentials{}, fmt.Errorf("reading the answer: %w", err)
				}
				continue
			}
			creds, err := readResult(d, result)
			if err != nil {
				return aws.Credentials{}, fmt.Errorf("reading the answer's %s: %w", result, err)
			}
			return creds, nil
		case xml.EndElement:
			return aws.Credentials{}, fmt.Errorf("the answer (%s) has no %s", root.Name.Local, result)
		}
	}
}

// readResult reads the members of the result element just opened, to
// its end.
func readResult(d *xml.Decoder, result string) (aws.Credentials, error) {
	creds := aws.Credentials{CanExpire: true}
	var hasCreds bool
	var arn string
	err := eachChild(d, func(t xml.StartElement) error {
		name := t.Name.Local
		switch {
		case strings.EqualFold(name, "Credentials"):
			hasCreds = true
			return eachChild(d, func(t xml.StartElement) error { return readCredential(d, t, &creds) })
		case strings.EqualFold(name, "AssumedRoleUser"):
			return eachChild(d, func(t xml.StartElement) error {
				switch {
				case strings.EqualFold(t.Name.Local, "Arn"):
					v, err := text(d, t)
					arn = v
					return err
				case strings.EqualFold(t.Name.Local, "AssumedRoleId"):
					_, err := text(d, t)
					return err
				}
				return d.Skip()
			})
		}
		switch resultMember(result, name) {
		case textMember:
			_, err := text(d, t)
			return err
		case intMember:
			v, err := text(d, t)
			if err != nil {
				return err
			}
			if _, err := strconv.ParseInt(v, 10, 64); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			return nil
		}
		return d.Skip()
	})
	if err != nil {
		return aws.Credentials{}, err
	}
	if !hasCreds {
		return aws.Credentials{}, errors.New("the answer holds no credentials")
	}
	// arn:PARTITION:sts::ACCOUNT:assumed-role/…, as stscreds reads it.
	if parts := strings.Split(arn, ":"); len(parts) >= 5 {
		creds.AccountID = parts[4]
	}
	return creds, nil
}

// readCredential reads the member of Credentials just opened into creds
// (a member read again replaces the value read before).
func readCredential(d *xml.Decoder, t xml.StartElement, creds *aws.Credentials) error {
	var field *string
	switch name := t.Name.Local; {
	case strings.EqualFold(name, "AccessKeyId"):
		field = &creds.AccessKeyID
	case strings.EqualFold(name, "SecretAccessKey"):
		field = &creds.SecretAccessKey
	case strings.EqualFold(name, "SessionToken"):
		field = &creds.SessionToken
	case strings.EqualFold(name, "Expiration"):
		v, err := text(d, t)
		if err != nil {
			return err
		}
		if creds.Expires, err = parseTime(v); err != nil {
			return fmt.Errorf("the credentials' Expiration: %w", err)
		}
		return nil
	default:
		return d.Skip()
	}
	v, err := text(d, t)
	if err != nil {
		return err
	}
	*field = v
	return nil
}

// memberKind is how the SDK's deserializer reads a member of a result
// that the providers do not use.
type memberKind int

const (
	otherMember memberKind = iota // skipped, whatever it holds
	textMember                    // text only
	intMember                     // text only, a decimal integer
)

// resultMember is the kind of the member name (any case) of the result
// element result: AssumeRoleResult's and
// AssumeRoleWithWebIdentityResult's scalar members.
func resultMember(result, name string) memberKind {
	is := func(names ...string) bool {
		for _, n := range names {
			if strings.EqualFold(name, n) {
				return true
			}
		}
		return false
	}
	switch {
	case is("PackedPolicySize", "SessionTokenSize", "SessionTokenUtilization"):
		return intMember
	case is("SourceIdentity"):
		return textMember
	case strings.EqualFold(result, "AssumeRoleWithWebIdentityResult") && is("Audience", "Provider", "SubjectFromWebIdentityToken"):
		return textMember
	}
	return otherMember
}

// eachChild calls read with each child element of the element just
// opened, to its end; read must consume the child to its end. Text,
// comments and the like between children are passed over.
func eachChild(d *xml.Decoder, read func(xml.StartElement) error) error {
	for {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if err := read(t); err != nil {
				return err
			}
		case xml.EndElement:
			return nil
		}
	}
}

// text is the text of the element start opened, to its end: "" for an
// empty element, an error when it holds anything but one run of text
// (an element, a comment), as the SDK's deserializer reads a value. The
// error names the element, never what it holds.
func text(d *xml.Decoder, start xml.StartElement) (string, error) {
	tok, err := d.Token()
	if err != nil {
		return "", err
	}
	var v string
	if t, ok := tok.(xml.CharData); ok {
		v = string(t)
		if tok, err = d.Token(); err != nil {
			return "", err
		}
	}
	if _, ok := tok.(xml.EndElement); !ok {
		return "", fmt.Errorf("%s holds more than text", start.Name.Local)
	}
	return v, nil
}

// nextStart is the next start element of d.
func nextStart(d *xml.Decoder) (xml.StartElement, error) {
	for {
		tok, err := d.Token()
		if err != nil {
			return xml.StartElement{}, err
		}
		if t, ok := tok.(xml.StartElement); ok {
			return t, nil
		}
	}
}

// timeLayouts are the timestamps the SDK reads in STS's answers.
var timeLayouts = []string{
	"2006-01-02T15:04:05.999999999Z",
	"2006-01-02T15:04:05.999999999",
	time.RFC3339Nano,
	time.RFC3339,
}

func parseTime(s string) (time.Time, error) {
	var first error
	for _, layout := range timeLayouts {
		t, err := time.Parse(layout, s)
		if err == nil {
			return t, nil
		}
		if first == nil {
			first = err
		}
	}
	return time.Time{}, fmt.Errorf("not a time: %w", first)
}
