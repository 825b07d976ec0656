package integration

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/testenv"
)

// A LoadBalancer Service gets a VIP from the [Pool], recorded as a tag in vCenter; deleting the
// Service removes the record and the finalizer.
func TestLoadBalancerVIP(t *testing.T) {
	startCCM(t, "ccm-lb", config())
	ctx := context.Background()
	svc := testenv.LoadBalancerService("default", "it-vip", 80)
	if _, err := env.Client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var ip string
	eventually(t, 30*time.Second, "an ingress IP", func() (bool, error) {
		s, err := env.Client.CoreV1().Services("default").Get(ctx, "it-vip", metav1.GetOptions{})
		if err == nil && len(s.Status.LoadBalancer.Ingress) > 0 {
			ip = s.Status.LoadBalancer.Ingress[0].IP
		}
		return ip != "", err
	})
	if a, err := netip.ParseAddr(ip); err != nil || !netip.MustParsePrefix("192.0.2.0/28").Contains(a) {
		t.Errorf("ingress IP %q is not from the pool 192.0.2.0/28", ip)
	}
	recs, err := vc.TagsInCategory(ctx, "ccm-load-balancers")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for name, desc := range recs {
		if strings.Contains(name, "it-vip") && strings.Contains(desc, ip) && strings.Contains(desc, "default/it-vip") {
			found = true
		}
	}
	if !found {
		t.Errorf("no record of %s for default/it-vip in vCenter: %v", ip, recs)
	}
	if err := env.Client.CoreV1().Services("default").Delete(ctx, "it-vip", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the Service gone (finalizer removed)", func() (bool, error) {
		_, err := env.Client.CoreV1().Services("default").Get(ctx, "it-vip", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	recs, err = vc.TagsInCategory(ctx, "ccm-load-balancers")
	if err != nil {
		t.Fatal(err)
	}
	for name := range recs {
		if strings.Contains(name, "it-vip") {
			t.Errorf("record %s left in vCenter after the Service was deleted", name)
		}
	}
}
