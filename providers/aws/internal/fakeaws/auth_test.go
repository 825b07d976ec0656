package fakeaws

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

func status(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// Every API the fake serves checks the SigV4 signature through the real SDK clients: the
// right secret is served, a wrong one is SignatureDoesNotMatch (403), an unknown access key is
// AuthFailure for EC2 and InvalidClientTokenId for the others, each in its protocol's error
// shape (the SDK's deserializers read the code from it).
func TestSignatureChecked(t *testing.T) {
	s, _, _ := clients(t)
	ctx := context.Background()
	calls := func(key, secret string) map[string]error {
		cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider(key, secret, ""),
			Retryer: func() aws.Retryer { return aws.NopRetryer{} }}
		ep := aws.String(s.URL())
		_, e1 := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = ep }).DescribeInstances(ctx, &ec2.DescribeInstancesInput{})
		_, e2 := elb.NewFromConfig(cfg, func(o *elb.Options) { o.BaseEndpoint = ep }).DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{})
		_, e3 := elbv2.NewFromConfig(cfg, func(o *elbv2.Options) { o.BaseEndpoint = ep }).DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{})
		_, e4 := sts.NewFromConfig(cfg, func(o *sts.Options) { o.BaseEndpoint = ep }).AssumeRole(ctx, &sts.AssumeRoleInput{
			RoleArn: aws.String("arn:aws:iam::123456789012:role/ccm"), RoleSessionName: aws.String("t")})
		return map[string]error{"ec2": e1, "elb": e2, "elbv2": e3, "sts": e4}
	}
	for api, err := range calls("AKID", "secret") {
		if err != nil {
			t.Errorf("%s with the right secret: %v", api, err)
		}
	}
	for api, err := range calls("AKID", "not-the-secret") {
		if code(err) != "SignatureDoesNotMatch" || status(err) != 403 {
			t.Errorf("%s with a wrong secret: code %q status %d (%v), want SignatureDoesNotMatch 403", api, code(err), status(err), err)
		}
	}
	want := map[string]string{"ec2": "AuthFailure", "elb": "InvalidClientTokenId", "elbv2": "InvalidClientTokenId", "sts": "InvalidClientTokenId"}
	for api, err := range calls("AKIDUNKNOWN", "secret") {
		if code(err) != want[api] {
			t.Errorf("%s with an unknown access key: code %q (%v), want %s", api, code(err), err, want[api])
		}
	}
	if got := s.Operations()["ec2:DescribeInstances"]; got != 3 {
		t.Errorf("fake counted %d DescribeInstances, want 3", got)
	}
}

// Keys issued by AssumeRole are checked with their own secret: the right one works, the base
// key's secret does not.
func TestSignatureOfAssumedKeys(t *testing.T) {
	s, _, _ := clients(t)
	ctx := context.Background()
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDBASE", "base-secret", ""),
		Retryer: func() aws.Retryer { return aws.NopRetryer{} }}
	out, err := sts.NewFromConfig(cfg, func(o *sts.Options) { o.BaseEndpoint = aws.String(s.URL()) }).AssumeRole(ctx,
		&sts.AssumeRoleInput{RoleArn: aws.String("arn:aws:iam::123456789012:role/ccm"), RoleSessionName: aws.String("t")})
	if err != nil {
		t.Fatal(err)
	}
	c := out.Credentials
	for _, tc := range []struct {
		secret, code string
	}{{aws.ToString(c.SecretAccessKey), ""}, {"base-secret", "SignatureDoesNotMatch"}} {
		cfg.Credentials = credentials.NewStaticCredentialsProvider(aws.ToString(c.AccessKeyId), tc.secret, aws.ToString(c.SessionToken))
		_, err := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(s.URL()) }).DescribeInstances(ctx, &ec2.DescribeInstancesInput{})
		if code(err) != tc.code || (tc.code == "" && err != nil) {
			t.Errorf("assumed key with secret #%d: %v, want code %q", len(tc.secret), err, tc.code)
		}
	}
}

// Raw requests: the signature covers the body, the signed headers and the date; a request
// from a clock more than 15 minutes off is refused; an unsigned one is refused.
func TestSignatureCoversRequest(t *testing.T) {
	s, _, _ := clients(t)
	const body = "Action=DescribeInstances&Version=2016-11-15"
	send := func(signBody, sendBody string, when time.Time, mutate func(*http.Request)) (int, string) {
		t.Helper()
		r, err := http.NewRequest(http.MethodPost, s.URL()+"/", strings.NewReader(sendBody))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set("X-Custom", "a")
		sum := sha256.Sum256([]byte(signBody))
		r.ContentLength = int64(len(signBody))
		if mutate == nil || signBody != "" {
			creds := aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret"}
			if err := v4.NewSigner().SignHTTP(context.Background(), creds, r, hex.EncodeToString(sum[:]), "ec2", "us-east-1", when); err != nil {
				t.Fatal(err)
			}
		}
		r.ContentLength = int64(len(sendBody))
		if mutate != nil {
			mutate(r)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	now := time.Now()
	for _, tc := range []struct {
		name           string
		signBody, body string
		when           time.Time
		mutate         func(*http.Request)
		wantStatus     int
		wantCode       string
	}{
		{"signed as sent", body, body, now, nil, 200, ""},
		{"body changed after signing", body, body + "&Filter.1.Name=vpc-id", now, nil, 403, "SignatureDoesNotMatch"},
		{"signed header changed", body, body, now, func(r *http.Request) { r.Header.Set("X-Custom", "b") }, 403, "SignatureDoesNotMatch"},
		{"unsigned header added", body, body, now, func(r *http.Request) { r.Header.Set("X-Other", "b") }, 200, ""},
		{"clock 20 minutes behind", body, body, now.Add(-20 * time.Minute), nil, 400, "RequestExpired"},
		{"clock 10 minutes ahead", body, body, now.Add(10 * time.Minute), nil, 200, ""},
		{"unsigned", "", body, now, func(r *http.Request) { r.Header.Del("Authorization") }, 403, "MissingAuthenticationToken"},
	} {
		st, out := send(tc.signBody, tc.body, tc.when, tc.mutate)
		if st != tc.wantStatus || (tc.wantCode != "" && !strings.Contains(out, "<Code>"+tc.wantCode+"</Code>")) {
			t.Errorf("%s: %d %s, want %d %s", tc.name, st, out, tc.wantStatus, tc.wantCode)
		}
	}
}
