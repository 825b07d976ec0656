package integration

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"context"

	"github.com/ccm-project/ccm/common/testenv"
)

func TestNodeInitialisation(t *testing.T) {
	id := machine(t, "os-node-a", "10.0.1.11", "172.24.4.211")
	n := waitInitialised(t, "os-node-a")
	if want := "openstack:///" + id; n.Spec.ProviderID != want {
		t.Errorf("providerID = %q, want %q", n.Spec.ProviderID, want)
	}
	for label, want := range map[string]string{v1.LabelTopologyZone: "az-1", v1.LabelTopologyRegion: cloud.Region(), v1.LabelInstanceTypeStable: "m1.medium"} {
		if got := n.Labels[label]; got != want {
			t.Errorf("label %s = %q, want %q", label, got, want)
		}
	}
	// Every OpenStack call is counted on /metrics.
	tok, err := env.MetricsReaderToken(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if v, err := ccm.Metric(tok, `ccm_cloud_api_requests_total{operation="GET compute/servers/detail",provider="openstack"`); err != nil || v < 1 {
		_, body, _ := ccm.Get("/metrics", tok)
		var lines []string
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, "ccm_cloud_api_requests_total") {
				lines = append(lines, l)
			}
		}
		t.Errorf("ccm_cloud_api_requests_total for GET compute/servers/detail = %v, %v; have:\n%s", v, err, strings.Join(lines, "\n"))
	}
	// As upstream: no Hostname, since the server has no metadata hostname and this Node no
	// kubelet-reported one to keep.
	want := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.1.11"}, {Type: v1.NodeExternalIP, Address: "172.24.4.211"}}
	if !slices.Equal(n.Status.Addresses, want) {
		t.Errorf("addresses = %v, want %v", n.Status.Addresses, want)
	}
}

// A NotReady Node whose server Nova no longer has is deleted (after the guard's window); one
// whose look-ups fail is kept however long they fail.
func TestGoneServerNodeDeletedNotWhileErrors(t *testing.T) {
	gone := machine(t, "os-gone", "10.0.1.21", "")
	broken := machine(t, "os-broken", "10.0.1.22", "")
	waitInitialised(t, "os-gone")
	waitInitialised(t, "os-broken")

	cloud.DeleteServer(gone)
	cloud.FailServer(broken, http.StatusInternalServerError)
	changed := time.Now()
	for _, n := range []string{"os-gone", "os-broken"} {
		if err := testenv.SetNodeReady(context.Background(), env.Client, n, v1.ConditionUnknown); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "os-gone deleted", func() (bool, error) {
		_, err := getNode("os-gone")
		return apierrors.IsNotFound(err), nil
	})
	if took := time.Since(changed); took < deletionWindow {
		t.Errorf("deleted %v after the server went, before the %v confirmation window", took, deletionWindow)
	}
	time.Sleep(time.Until(changed.Add(3 * deletionWindow)))
	if _, err := getNode("os-broken"); err != nil {
		t.Fatalf("Node deleted while Nova returned 500 for its server: %v", err)
	}
	cloud.FailServer(broken, 0)
}
