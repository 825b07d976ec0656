package fakeaws

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// AssumeRole through the SDK's STS client: the answer deserializes, the temporary key works
// only with its session token and only until it expires, and the signer is recorded.
func TestAssumeRoleThroughSDK(t *testing.T) {
	s, _, _ := clients(t)
	ctx := context.Background()
	s.SetSessionLifetime(time.Second)
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDBASE", "base-secret", ""),
		Retryer: func() aws.Retryer { return aws.NopRetryer{} }}
	st := sts.NewFromConfig(cfg, func(o *sts.Options) { o.BaseEndpoint = aws.String(s.URL()) })
	out, err := st.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: aws.String("arn:aws:iam::123456789012:role/ccm"), RoleSessionName: aws.String("t")})
	if err != nil {
		t.Fatal(err)
	}
	c := out.Credentials
	if aws.ToString(out.AssumedRoleUser.Arn) != "arn:aws:sts::123456789012:assumed-role/ccm/t" || c == nil || aws.ToString(c.SessionToken) == "" || c.Expiration == nil {
		t.Fatalf("answer %+v", out)
	}
	if _, err := st.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: aws.String("not-an-arn"), RoleSessionName: aws.String("t")}); code(err) != "ValidationError" {
		t.Errorf("bad RoleArn: %v", err)
	}

	call := func(token string) error {
		cfg := cfg
		cfg.Credentials = credentials.NewStaticCredentialsProvider(aws.ToString(c.AccessKeyId), aws.ToString(c.SecretAccessKey), token)
		_, err := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(s.URL()) }).DescribeInstances(ctx, &ec2.DescribeInstancesInput{})
		return err
	}
	if err := call(aws.ToString(c.SessionToken)); err != nil {
		t.Errorf("with the session token: %v", err)
	}
	if err := call(""); code(err) != "InvalidClientTokenId" {
		t.Errorf("without the session token: %v", err)
	}
	want := Signature{Op: "ec2:DescribeInstances", AccessKey: aws.ToString(c.AccessKeyId), Region: "us-east-1", Service: "ec2", SessionToken: true}
	if s.Signatures()[want] != 1 {
		t.Errorf("signatures %v lack %+v", s.Signatures(), want)
	}
	if s.Signatures()[Signature{Op: "sts:AssumeRole", AccessKey: "AKIDBASE", Region: "us-east-1", Service: "sts"}] != 2 {
		t.Errorf("AssumeRole signers %v", s.Signatures())
	}
	time.Sleep(c.Expiration.Sub(time.Now()) + 10*time.Millisecond)
	if err := call(aws.ToString(c.SessionToken)); code(err) != "ExpiredToken" {
		t.Errorf("after expiry: %v", err)
	}
	if w := s.Writes(); w != 0 {
		t.Errorf("AssumeRole counted as %d writes", w)
	}
}

// An outage answers every call 503, and the control adapter counts it as failed.
func TestOutageThroughSDK(t *testing.T) {
	s, e, l := clients(t)
	ctx := context.Background()
	ctl := s.Control("k")
	ctl.SetOutage(true)
	if _, err := e.DescribeInstances(ctx, &ec2.DescribeInstancesInput{}); code(err) != "Unavailable" {
		t.Errorf("EC2 during the outage: %v", err)
	}
	if _, err := l.DescribeLoadBalancers(ctx, nil); code(err) != "ServiceUnavailable" {
		t.Errorf("ELB during the outage: %v", err)
	}
	ctl.SetOutage(false)
	if _, err := e.DescribeInstances(ctx, &ec2.DescribeInstancesInput{}); err != nil {
		t.Errorf("after the outage: %v", err)
	}
	if c := ctl.Calls(); c.Failed != 2 || c.Total != 3 || c.PerOp["ec2:DescribeInstances"] != 2 {
		t.Errorf("calls %+v", c)
	}
}
