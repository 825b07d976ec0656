package openstack

import (
	"strings"
	"time"

	"github.com/ccm-project/ccm/common/config"
)

// [Metadata], as the upstream CCM reads it. Neither key is about the metadata service for the
// CCM itself (it looks servers up in Nova, as ccm does):
//   - request-timeout is the HTTP timeout of every OpenStack API call upstream makes (it sets
//     its provider client's timeout from it; 60s when unset or 0), so ccm does the same;
//   - search-order is checked at start-up (upstream refuses to start on a bad one) and
//     otherwise unused, here too.

// defaultAPITimeout is upstream's default request-timeout.
const defaultAPITimeout = 60 * time.Second

// apiTimeout is the timeout of one OpenStack API call.
func (c *Config) apiTimeout() time.Duration {
	if t := c.Metadata.RequestTimeout; t != nil && t.Duration > 0 {
		return t.Duration
	}
	return defaultAPITimeout
}

// metadataProblems are the [Metadata] values upstream would not start with. (A negative
// request-timeout, which upstream reads as "no timeout", is already refused by the reader.)
func (c *Config) metadataProblems() config.Problems {
	var ps config.Problems
	if o := c.Metadata.SearchOrder; o != nil && *o != "" {
		items := strings.Split(*o, ",")
		if len(items) > 2 {
			ps.Add(secMeta, "search-order", "has more than 2 elements; the upstream CCM would not start (use configDrive, metadataService or both)")
		}
		for _, item := range items {
			if id := strings.TrimSpace(item); id != "configDrive" && id != "metadataService" {
				ps.Add(secMeta, "search-order", "element %q is neither configDrive nor metadataService; the upstream CCM would not start", id)
				break
			}
		}
	}
	return ps
}
