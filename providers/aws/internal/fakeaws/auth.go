package fakeaws

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// MaxClockSkew is how far a request's X-Amz-Date may be from the fake's clock, as in AWS.
const MaxClockSkew = 15 * time.Minute

// AddCredentials makes a long-term access key known to the fake: requests signed with it
// must be signed with secret. A request signed with a key the fake does not know is refused
// (AuthFailure for EC2, InvalidClientTokenId elsewhere), as AWS refuses it.
func (s *Server) AddCredentials(accessKey, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[accessKey] = secret
}

// authorization is the parsed Authorization header of a SigV4 request.
type authorization struct {
	accessKey, date, region, service string
	signedHeaders                    []string
	signature                        string
}

func parseAuthorization(h string) (authorization, bool) {
	var a authorization
	rest, ok := strings.CutPrefix(h, "AWS4-HMAC-SHA256 ")
	if !ok {
		return a, false
	}
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Credential":
			p := strings.Split(v, "/")
			if len(p) != 5 || p[4] != "aws4_request" {
				return a, false
			}
			a.accessKey, a.date, a.region, a.service = p[0], p[1], p[2], p[3]
		case "SignedHeaders":
			a.signedHeaders = strings.Split(v, ";")
		case "Signature":
			a.signature = v
		}
	}
	return a, a.accessKey != "" && a.signature != "" && len(a.signedHeaders) > 0
}

// authenticate checks who signed r and that the signature is right: the access key must be
// one the fake knows (AddCredentials, or a key its AssumeRole issued, with that key's session
// token and before it expires), the credential scope must name the date of X-Amz-Date, X-Amz-Date must be within MaxClockSkew, and the SigV4 signature, recomputed
// with the key's secret over the signed headers and the SHA-256 of body, must match.
func (s *Server) authenticate(svc string, r *http.Request, body []byte) *apiError {
	ec2 := svc == "ec2"
	a, ok := parseAuthorization(r.Header.Get("Authorization"))
	if !ok {
		return &apiError{Status: 403, Code: "MissingAuthenticationToken", Message: "Request is missing Authentication Token"}
	}
	secret, token, aerr := s.secretOf(a.accessKey, r, ec2)
	if aerr != nil {
		return aerr
	}
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return &apiError{Status: 400, Code: "IncompleteSignature", Message: "X-Amz-Date is missing or malformed"}
	}
	if skew := time.Since(when); skew > MaxClockSkew || skew < -MaxClockSkew {
		if ec2 {
			return &apiError{Status: 400, Code: "RequestExpired", Message: "Request has expired."}
		}
		return &apiError{Status: 403, Code: "SignatureDoesNotMatch", Message: "Signature expired: " + when.Format("20060102T150405Z") + " is now earlier or later than the allowed skew."}
	}
	// The scope's service and region are taken as signed (a [ServiceOverride]'s SigningName
	// and SigningRegion change them, for AWS-compatible clouds); the signature covers them.
	if a.date != when.Format("20060102") || a.service == "" || a.region == "" {
		return &apiError{Status: 403, Code: "SignatureDoesNotMatch", Message: "Credential should be scoped to a valid region, a service and the date of X-Amz-Date."}
	}
	if !signatureMatches(r, body, a, when, secret, token) {
		return &apiError{Status: 403, Code: "SignatureDoesNotMatch", Message: "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details."}
	}
	return nil
}

// secretOf is the secret of accessKey and the session token it must come with.
func (s *Server) secretOf(accessKey string, r *http.Request, ec2 bool) (secret, token string, aerr *apiError) {
	if sess, ok := s.sessions[accessKey]; ok {
		if r.Header.Get("X-Amz-Security-Token") != sess.token {
			return "", "", &apiError{Status: 403, Code: "InvalidClientTokenId", Message: "The security token included in the request is invalid."}
		}
		if time.Now().After(sess.expires) {
			return "", "", &apiError{Status: 403, Code: "ExpiredToken", Message: "The security token included in the request is expired."}
		}
		return sess.secret, sess.token, nil
	}
	secret, ok := s.keys[accessKey]
	if !ok {
		if ec2 {
			return "", "", &apiError{Status: 401, Code: "AuthFailure", Message: "AWS was not able to validate the provided access credentials"}
		}
		return "", "", &apiError{Status: 403, Code: "InvalidClientTokenId", Message: "The security token included in the request is invalid."}
	}
	return secret, "", nil
}

// signatureMatches signs a copy of r that carries only the headers r says it signed, with the
// SDK's own signer, and compares the result with r's signature.
func signatureMatches(r *http.Request, body []byte, a authorization, when time.Time, secret, token string) bool {
	u := url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
	c, err := http.NewRequestWithContext(context.Background(), r.Method, u.String(), nil)
	if err != nil {
		return false
	}
	c.Host = r.Host
	for _, h := range a.signedHeaders {
		switch h {
		case "host":
		case "content-length":
			n, err := strconv.ParseInt(r.Header.Get("Content-Length"), 10, 64)
			if err != nil || n != int64(len(body)) {
				return false
			}
			c.ContentLength = n
		default:
			vs, ok := r.Header[http.CanonicalHeaderKey(h)]
			if !ok {
				return false // signed a header that did not arrive
			}
			c.Header[http.CanonicalHeaderKey(h)] = vs
		}
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	if got := r.Header.Get("X-Amz-Content-Sha256"); got != "" && got != hash {
		return false
	}
	creds := aws.Credentials{AccessKeyID: a.accessKey, SecretAccessKey: secret, SessionToken: token}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, c, hash, a.service, a.region, when); err != nil {
		return false
	}
	want, ok := parseAuthorization(c.Header.Get("Authorization"))
	if !ok || strings.Join(want.signedHeaders, ";") != strings.Join(a.signedHeaders, ";") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(want.signature), []byte(a.signature)) == 1
}
