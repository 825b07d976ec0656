package main

import (
	"testing"

	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

func TestWithMember(t *testing.T) {
	lbs := []fake.LoadBalancer{
		{Name: "both listeners", Listeners: []fake.Listener{{Members: []string{"10.0.1.2:30080", "10.0.1.5:30080"}}, {Members: []string{"10.0.1.5:30443"}}}},
		{Name: "one of two", Listeners: []fake.Listener{{Members: []string{"10.0.1.5:30080"}}, {Members: []string{"10.0.1.2:30443"}}}},
		{Name: "a longer address", Listeners: []fake.Listener{{Members: []string{"10.0.1.50:30080"}}}},
		{Name: "no listener"},
	}
	if n := withMember(lbs, "10.0.1.5"); n != 1 {
		t.Errorf("withMember: %d, want 1 (only the LB with the member in every listener)", n)
	}
}
