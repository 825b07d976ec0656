package aws

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
)

// Retry policy. EC2 and ELB throttle per account with token buckets; the SDK's default (3
// attempts, and a client-side retry quota of 100 retries) turns a burst of Services into failed
// reconciles and Warning events. Adaptive mode paces the client after a throttling answer
// instead, more attempts ride out a bucket refill, and a cheaper retry cost keeps the quota,
// which still stops retry storms in an outage, from running dry under plain throttling.
// retryPolicy is how the SDK retries a failed call: attempts and the most one back-off waits.
// Production uses defaultRetry; the tests set a short back-off (useRetry), so a check that
// runs calls into an outage does not wait out 8 attempts of up to 10 s each.
type retryPolicy struct {
	maxAttempts int
	maxBackoff  time.Duration
}

var defaultRetry = retryPolicy{maxAttempts: 8, maxBackoff: 10 * time.Second}

const (
	retryTokens = 500 // the SDK's default quota...
	retryCost   = 1   // ...at 1 per retry instead of 5
)

func (p retryPolicy) retryer() aws.Retryer {
	return retry.NewAdaptiveMode(func(o *retry.AdaptiveModeOptions) {
		o.StandardOptions = append(o.StandardOptions, func(s *retry.StandardOptions) {
			s.MaxAttempts = p.maxAttempts
			s.MaxBackoff = p.maxBackoff
			s.RateLimiter = ratelimit.NewTokenRateLimit(retryTokens)
			s.RetryCost = retryCost
			s.RetryTimeoutCost = 2 * retryCost
		})
	})
}
