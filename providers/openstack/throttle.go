package openstack

import (
	"context"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/throttle"
)

// A throttled call (429, as OpenStack's rate-limit middleware answers) is retried inside the
// call by gophercloud's ProviderClient, which calls RetryBackoffFunc for 429 only; an
// error returned to the service controller would instead requeue the whole reconcile and
// repeat its reads. Each attempt, refused or not, is counted by the metrics transport
// (result "throttled" for a 429).
// throttlePolicy bounds the retries of one call (a variable for the tests).
var throttlePolicy = throttle.Default

// throttleBackoff is a gophercloud RetryBackoffFunc (retry counts from 1): it waits as
// throttlePolicy says and gives up when ctx would end first.
func throttleBackoff(ctx context.Context, respErr *gophercloud.ErrUnexpectedResponseCode, _ error, retry uint) error {
	after, ok := throttle.RetryAfter(respErr.ResponseHeader, time.Now())
	wait := throttlePolicy.Wait(int(retry)-1, after, ok)
	klog.V(4).InfoS("OpenStack call throttled; retrying", "method", respErr.Method, "url", respErr.URL, "retry", retry, "wait", wait)
	if err := throttle.Sleep(ctx, wait); err != nil {
		return respErr
	}
	return nil
}
