package openstack

import (
	"net/http/httptest"
	"testing"
)

func TestOperationNamesHaveNoIDs(t *testing.T) {
	for path, want := range map[string]string{
		"/compute/v2.1/servers/9f0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b":                   "GET compute/servers",
		"/compute/v2.1/servers/detail":                                                 "GET compute/servers/detail",
		"/load-balancer/v2.0/lbaas/pools/3f2a1b4c-5d6e-4f70-8192-a3b4c5d6e7f8/members": "GET lbaas/pools/members",
		"/network/v2.0/floatingips":                                                    "GET network/floatingips",
	} {
		if got := operation(httptest.NewRequest("GET", "http://h"+path, nil)); got != want {
			t.Errorf("operation(%s) = %q, want %q", path, got, want)
		}
	}
}
