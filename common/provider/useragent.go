package provider

import (
	"slices"
	"sync"
)

var (
	userAgentMu sync.Mutex
	userAgent   []string
)

// SetUserAgent records what --user-agent adds to the User-Agent header of cloud API calls (the
// upstream OpenStack CCM's flag). It is set before any provider is built.
func SetUserAgent(parts []string) {
	userAgentMu.Lock()
	defer userAgentMu.Unlock()
	userAgent = slices.Clone(parts)
}

// UserAgent returns what --user-agent adds, in the order given.
func UserAgent() []string {
	userAgentMu.Lock()
	defer userAgentMu.Unlock()
	return slices.Clone(userAgent)
}
