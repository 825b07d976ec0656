package aws

import (
	"context"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/ccm-project/ccm/common/metrics"
)

// countCalls adds a middleware that records every attempt (retries included) in
// ccm_cloud_api_requests_total with the service and operation name. It sits in the
// deserialize step, which runs once per HTTP attempt. (The SDK's HTTP client is left alone:
// it honours AWS_CA_BUNDLE only when it is the SDK's own buildable client.)
func countCalls(stack *middleware.Stack) error {
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("ccmCountCalls",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			start := time.Now()
			out, md, err := next.HandleDeserialize(ctx, in)
			result := metrics.Classify(err, isThrottle)
			if resp, ok := out.RawResponse.(*smithyhttp.Response); ok && (resp.StatusCode == 429 || resp.StatusCode == 503) {
				result = metrics.ResultThrottled
			}
			metrics.ObserveCloudCall(ProviderName, awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx), start, result)
			return out, md, err
		}), middleware.Before)
}

func isThrottle(err error) bool {
	return isCode(err, "RequestLimitExceeded", "Throttling", "ThrottlingException", "RequestThrottled", "TooManyRequestsException")
}
