package fakeaws

import (
	"fmt"
	"strconv"
	"strings"
)

// SetPageLimit caps every list answer (EC2 Describe*, classic ELB and ELBv2 Describe*) at n
// items, whatever MaxResults or PageSize the client asked for, with a NextToken or NextMarker
// for the rest: AWS may return fewer items than asked for, and a client must follow the token
// until there is none. Tests set a small n and create more objects than a page. 0 turns the
// cap off: EC2 then answers everything when MaxResults is absent and ELB pages at 400.
func (s *Server) SetPageLimit(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pageLimit = n
}

// ec2Page cuts all to the page an EC2 Describe asks for. MaxResults is maxLimit's range
// (5-1000 for most calls, 5-100 for DescribeRouteTables); without it every item is answered
// (the API reference: "If this parameter is not specified, then all items are returned"),
// but for the fake's page limit. withIDs says the request named IDs: DescribeInstances
// refuses MaxResults with InstanceIds. NextToken is the opaque token of the page before,
// bound to the action so that one call's token does not continue another.
func ec2Page[T any](f form, all []T, maxLimit int, idsWithMax bool, limit int) ([]T, string, *apiError) {
	action := f.get("Action")
	size := len(all)
	if v := f.get("MaxResults"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 5 || n > maxLimit {
			return nil, "", invalid("Value ( %s ) for parameter maxResults is invalid. Expecting a value between 5 and %d.", v, maxLimit)
		}
		if idsWithMax {
			return nil, "", &apiError{Status: 400, Code: "InvalidParameterCombination", Message: "The parameter instancesSet cannot be used with the parameter maxResults"}
		}
		size = n
	}
	if limit > 0 && size > limit {
		size = limit
	}
	start := 0
	if tok := f.get("NextToken"); tok != "" {
		rest, ok := strings.CutPrefix(tok, action+".")
		n, err := strconv.Atoi(rest)
		if !ok || err != nil || n < 0 || n > len(all) {
			return nil, "", &apiError{Status: 400, Code: "InvalidPaginationToken", Message: fmt.Sprintf("Invalid pagination token: %s", tok)}
		}
		start = n
	}
	page, next := all[start:], ""
	if len(page) > size {
		page, next = page[:size], fmt.Sprintf("%s.%d", action, start+size)
	}
	return page, next, nil
}

// elbPage cuts all to the page a classic ELB or ELBv2 Describe asks for: PageSize 1-400
// (default 400), Marker the opaque NextMarker of the page before; and at most limit items
// when the fake's page limit is set.
func elbPage[T any](f form, all []T, limit int) ([]T, string, *apiError) {
	size := 400
	if v := f.get("PageSize"); v != "" {
		var err error
		if size, err = strconv.Atoi(v); err != nil || size < 1 || size > 400 {
			return nil, "", &apiError{Status: 400, Code: "ValidationError", Message: "1 validation error detected: Value '" + v + "' at 'pageSize' failed to satisfy constraint: Member must have value between 1 and 400"}
		}
	}
	if limit > 0 && size > limit {
		size = limit
	}
	start := 0
	if m := f.get("Marker"); m != "" {
		rest, ok := strings.CutPrefix(m, "m.")
		n, err := strconv.Atoi(rest)
		if !ok || err != nil || n < 0 || n > len(all) {
			return nil, "", &apiError{Status: 400, Code: "ValidationError", Message: "Invalid Marker: " + m}
		}
		start = n
	}
	page, next := all[start:], ""
	if len(page) > size {
		page, next = page[:size], "m."+strconv.Itoa(start+size)
	}
	return page, next, nil
}

// maxTagNames is how many load balancers (classic: LoadBalancerNames) or resources (ELBv2:
// ResourceArns) one DescribeTags may name.
const maxTagNames = 20
