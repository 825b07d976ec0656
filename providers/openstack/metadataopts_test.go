package openstack

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// [Metadata] request-timeout is the timeout of every API call, as upstream (60s by default);
// search-order values upstream would not start with are errors with their line.
func TestMetadataSection(t *testing.T) {
	for _, tc := range []struct {
		section string
		timeout time.Duration
		err     string
	}{
		{"", 60 * time.Second, ""},
		{"request-timeout = 10s\n", 10 * time.Second, ""},
		{"request-timeout = 0s\n", 60 * time.Second, ""},
		{"request-timeout = -1s\n", 0, "line 8: [Metadata] request-timeout: invalid duration: must not be negative"},
		{"search-order = configDrive, metadataService\n", 60 * time.Second, ""},
		{"search-order = metadataService\n", 60 * time.Second, ""},
		{"search-order = \"\"\n", 60 * time.Second, ""},
		{"search-order = configDrive,metadataService,configDrive\n", 0, "line 8: [Metadata] search-order: has more than 2 elements"},
		{"search-order = configdrive\n", 0, `line 8: [Metadata] search-order: element "configdrive" is neither configDrive nor metadataService`},
	} {
		captureNotices(t)
		c, err := New(strings.NewReader(upstreamBase + "[Metadata]\n" + tc.section))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: got %v, want %q", tc.section, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.section, err)
			continue
		}
		if got := c.cfg.apiTimeout(); got != tc.timeout {
			t.Errorf("%q: API timeout %v, want %v", tc.section, got, tc.timeout)
		}
	}
}

// The timeout reaches the calls: a cloud slower than request-timeout fails, a faster one answers.
func TestRequestTimeoutAppliesToAPICalls(t *testing.T) {
	f := newFake(t, fake.Options{})
	id := f.AddServer(fake.ServerSpec{Name: "n1", IPs: []string{"10.0.0.5"}})
	f.SetLatency(300 * time.Millisecond)
	for _, tc := range []struct {
		timeout string
		ok      bool
	}{{"100ms", false}, {"5s", true}} {
		inst, _ := newTestCloud(t, f, "[Metadata]\nrequest-timeout = "+tc.timeout+"\n").InstancesV2()
		start := time.Now()
		_, err := inst.InstanceExists(context.Background(), node("n1", "openstack:///"+id))
		if (err == nil) != tc.ok {
			t.Errorf("request-timeout %s with 300ms latency: err = %v", tc.timeout, err)
		}
		if !tc.ok && time.Since(start) > 2*time.Second {
			t.Errorf("request-timeout %s: the failing look-up took %v", tc.timeout, time.Since(start))
		}
	}
}
