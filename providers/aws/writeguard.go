package aws

import (
	"context"
	"strings"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// A reconcile may decide that a load balancer is its Service's on the tags of the cluster's
// listing, which can be up to the listing's lifetime old: someone may have retagged it since.
// Reading the tags again for every sync would cost a read per load balancer even when nothing
// changes, so the fresh read is lazy: a reconcile that took its tags from the listing carries
// an ownerCheck in its context, and the first write request of that reconcile (any service,
// any operation that is not a read) runs the check first; a failed check fails that write and
// every later one. A reconcile that writes nothing reads nothing more.
//
// The NLB reconcile keeps this too, rather than a check of its own at its apply step
// (nlbapply.go): it also writes before its plan (the NLB made or made again, its security
// groups, the node rules, the takeover tags of upstream's target groups), and the check must
// come before the first of those, whichever it is.

// ownerCheck is one reconcile's pending ownership check: run at most once.
type ownerCheck struct {
	once  sync.Once
	check func(context.Context) error
	err   error
}

type ownerCheckKey struct{}

// confirmBeforeWrites returns ctx carrying check, to be run before the first write made with
// it. A check already pending in ctx stays (the earlier decision is the one to confirm).
func confirmBeforeWrites(ctx context.Context, check func(context.Context) error) context.Context {
	if _, ok := ctx.Value(ownerCheckKey{}).(*ownerCheck); ok {
		return ctx
	}
	return context.WithValue(ctx, ownerCheckKey{}, &ownerCheck{check: check})
}

// isWriteOperation says whether an EC2, ELB or ELBv2 operation may change the cloud: every
// read of theirs is a Describe*, Get* or List*; anything else counts as a write.
func isWriteOperation(op string) bool {
	for _, p := range []string{"Describe", "Get", "List"} {
		if strings.HasPrefix(op, p) {
			return false
		}
	}
	return op != ""
}

// ownerCheckBeforeWrites is the SDK middleware that runs a context's pending ownerCheck before
// a write request is sent. It sits after the operation's metadata is registered (so the
// operation name is known) and before signing and retries (so it runs once per call).
func ownerCheckBeforeWrites(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("ccmOwnerCheckBeforeWrites",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if c, ok := ctx.Value(ownerCheckKey{}).(*ownerCheck); ok && isWriteOperation(awsmiddleware.GetOperationName(ctx)) {
				c.once.Do(func() { c.err = c.check(ctx) })
				if c.err != nil {
					return middleware.InitializeOutput{}, middleware.Metadata{}, c.err
				}
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}
