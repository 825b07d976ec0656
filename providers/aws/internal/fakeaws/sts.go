package fakeaws

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"
)

const versionSTS = "2011-06-15"

// Signature is who signed a request and for which SigV4 credential scope, as read from its
// Authorization header (Credential=AKID/date/region/service/aws4_request).
type Signature struct {
	Op           string // "ec2:DescribeInstances"
	AccessKey    string
	Region       string
	Service      string
	SessionToken bool // an X-Amz-Security-Token header was sent
}

// session is a set of temporary credentials AssumeRole handed out.
type session struct {
	secret, token string
	expires       time.Time
}

// SetSessionLifetime sets how long credentials from AssumeRole stay valid (default: the
// DurationSeconds asked for, or one hour), so a test can watch them being refreshed.
func (s *Server) SetSessionLifetime(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessionTTL = d
}

// Signatures counts the requests served by signer and credential scope.
func (s *Server) Signatures() map[Signature]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[Signature]int, len(s.sigs))
	for k, v := range s.sigs {
		out[k] = v
	}
	return out
}

// signature reads the signer of r; fields stay empty for an unsigned or malformed request.
func signature(op string, r *http.Request) Signature {
	sig := Signature{Op: op, SessionToken: r.Header.Get("X-Amz-Security-Token") != ""}
	auth := r.Header.Get("Authorization")
	_, cred, ok := strings.Cut(auth, "Credential=")
	if !ok {
		return sig
	}
	cred, _, _ = strings.Cut(cred, ",")
	parts := strings.Split(cred, "/") // AKID/date/region/service/aws4_request
	if len(parts) == 5 {
		sig.AccessKey, sig.Region, sig.Service = parts[0], parts[2], parts[3]
	}
	return sig
}

func (s *Server) sts(action string, f form) (string, *apiError) {
	if action != "AssumeRole" {
		return "", &apiError{Status: 400, Code: "InvalidAction", Message: "the fake's STS serves only AssumeRole, not " + action}
	}
	role, name := f.get("RoleArn"), f.get("RoleSessionName")
	arn := strings.Split(role, ":")
	if len(arn) != 6 || arn[0] != "arn" || !strings.HasPrefix(arn[5], "role/") {
		return "", &apiError{Status: 400, Code: "ValidationError", Message: "RoleArn " + role + " is not an IAM role ARN"}
	}
	if name == "" {
		return "", &apiError{Status: 400, Code: "ValidationError", Message: "RoleSessionName is required"}
	}
	ttl := time.Hour
	if d, err := strconv.Atoi(f.get("DurationSeconds")); err == nil && d > 0 {
		ttl = time.Duration(d) * time.Second
	}
	if s.sessionTTL > 0 {
		ttl = s.sessionTTL
	}
	key := "ASIA" + strings.ToUpper(randomHex(8))
	secret, token := randomHex(20), "FQoG"+randomHex(40)
	// Whole seconds, as the answer states it, so the key expires when the client is told.
	expires := time.Now().Add(ttl + time.Second - 1).UTC().Truncate(time.Second)
	s.sessions[key] = session{secret: secret, token: token, expires: expires}
	s.issued = append(s.issued, secret, token)
	roleName := strings.TrimPrefix(arn[5], "role/")

	var x w
	x.open("Credentials")
	x.leaf("AccessKeyId", key)
	x.leaf("SecretAccessKey", secret)
	x.leaf("SessionToken", token)
	x.leaf("Expiration", expires.Format(time.RFC3339))
	x.close("Credentials")
	x.open("AssumedRoleUser")
	x.leaf("Arn", "arn:aws:sts::"+arn[4]+":assumed-role/"+roleName+"/"+name)
	x.leaf("AssumedRoleId", "AROA"+strings.ToUpper(randomHex(8))+":"+name)
	x.close("AssumedRoleUser")
	return x.b.String(), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// AssumeRoleSources returns the x-amz-source-account and x-amz-source-arn headers of every
// AssumeRole served, in order ("" where absent).
func (s *Server) AssumeRoleSources() [][2]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][2]string(nil), s.sourceHeaders...)
}
