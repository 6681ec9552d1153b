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
	sts := awscall.Client{HTTPClient: c.HTTPClient, Endpoint: c.Endpoint, MaxAttempts: c.MaxAttempts, Backoff: c.Backoff}
	answer, err := sts.Do(ctx, awscall.Call{
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
			e, err := readError(body, status)
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
	s := fmt.Sprintf("STS error %s (HTTP %d): %s", e.Code, e.Status, e.Message)
	if e.RequestID != "" {
		s += " (request id " + e.RequestID + ")"
	}
	return s
}

// ErrorCode is STS's error code.
func (e *apiError) ErrorCode() string { return e.Code }

// ErrorMessage is STS's message.
func (e *apiError) ErrorMessage() string { return e.Message }

// ErrorFault is whose fault STS says it is (Sender, Receiver).
func (e *apiError) ErrorFault() smithy.ErrorFault { return e.fault }

var _ smithy.APIError = (*apiError)(nil)

// readError reads an ErrorResponse (ROOT/Error/{Type,Code,Message},
// ROOT/RequestId; names as written). An empty body is the SDK's
// UnknownError.
func readError(data []byte, status int) (*apiError, error) {
	var doc struct {
		Type      string `xml:"Error>Type"`
		Code      string `xml:"Error>Code"`
		Message   string `xml:"Error>Message"`
		RequestID string `xml:"RequestId"`
	}
	if err := xml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil && err != io.EOF {
		return nil, fmt.Errorf("STS failed (HTTP %d) with an answer that is not an error response: %w", status, err)
	}
	e := &apiError{Code: doc.Code, Message: doc.Message, RequestID: doc.RequestID, Status: status}
	if e.Code == "" {
		e.Code = "UnknownError"
	}
	if e.Message == "" {
		e.Message = e.Code
	}
	switch doc.Type {
	case "Sender":
		e.fault = smithy.FaultClient
	case "Receiver":
		e.fault = smithy.FaultServer
	}
	return e, nil
}

// element is an XML element as the SDK's STS client reads one: its name
// and its text (elements within it, none here, are left).
type element struct {
	name string
	text string
	kids []*element
}

// child is e's first child named name, whatever the case.
func (e *element) child(name string) *element {
	if e == nil {
		return nil
	}
	for _, k := range e.kids {
		if strings.EqualFold(k.name, name) {
			return k
		}
	}
	return nil
}

// readCredentials reads ROOT/RESULT/Credentials and
// ROOT/RESULT/AssumedRoleUser/Arn of a successful answer, element names
// in any case as the SDK reads them. The document is read up to the end
// of RESULT. An empty answer has no credentials.
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
	var res *element
	for res == nil {
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
			if res, err = readElement(d, t); err != nil {
				return aws.Credentials{}, fmt.Errorf("reading the answer's %s: %w", result, err)
			}
		case xml.EndElement:
			return aws.Credentials{}, fmt.Errorf("the answer (%s) has no %s", root.Name.Local, result)
		}
	}
	c := res.child("Credentials")
	if c == nil {
		return aws.Credentials{}, errors.New("the answer holds no credentials")
	}
	creds := aws.Credentials{CanExpire: true}
	if k := c.child("AccessKeyId"); k != nil {
		creds.AccessKeyID = k.text
	}
	if k := c.child("SecretAccessKey"); k != nil {
		creds.SecretAccessKey = k.text
	}
	if k := c.child("SessionToken"); k != nil {
		creds.SessionToken = k.text
	}
	if k := c.child("Expiration"); k != nil {
		if creds.Expires, err = parseTime(k.text); err != nil {
			return aws.Credentials{}, fmt.Errorf("the credentials' Expiration: %w", err)
		}
	}
	if arn := res.child("AssumedRoleUser").child("Arn"); arn != nil {
		// arn:PARTITION:sts::ACCOUNT:assumed-role/…, as stscreds reads it.
		if parts := strings.Split(arn.text, ":"); len(parts) >= 5 {
			creds.AccountID = parts[4]
		}
	}
	return creds, nil
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

// readElement reads the element start opened, to its end.
func readElement(d *xml.Decoder, start xml.StartElement) (*element, error) {
	e := &element{name: start.Name.Local}
	var text strings.Builder
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			k, err := readElement(d, t)
			if err != nil {
				return nil, err
			}
			e.kids = append(e.kids, k)
		case xml.CharData:
			text.Write(t)
		case xml.EndElement:
			e.text = text.String()
			return e, nil
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
