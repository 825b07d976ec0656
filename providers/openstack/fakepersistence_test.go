package openstack

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// The fake refuses a session_persistence as Octavia does, and a null removes it.
func TestFakePersistenceValidation(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := newTestCloud(t, f, "")
	lb := lbOf(t, c)
	svc := lbService("val", nil, v1.ServicePort{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP},
		v1.ServicePort{Name: "dns", Port: 53, NodePort: 30053, Protocol: v1.ProtocolUDP})
	ensureUntilReady(t, lb, svc, lbNodes("10.0.0.5"))
	cl, err := c.sess.get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pages, err := listeners.List(cl.lb, listeners.ListOpts{LoadbalancerID: fakeLB(t, f, "val").ID}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ls, _ := listeners.ExtractListeners(pages)
	poolOf := map[string]string{}
	for _, l := range ls {
		poolOf[l.Protocol] = l.DefaultPoolID
	}
	for _, tc := range []struct {
		proto string
		sp    pools.SessionPersistence
		err   string // "" accepted
	}{
		{"TCP", pools.SessionPersistence{Type: "APP_COOKIE"}, "must be specified"},
		{"TCP", pools.SessionPersistence{Type: "SOURCE_IP", CookieName: "c"}, "can only be specified"},
		{"TCP", pools.SessionPersistence{Type: "STICKY"}, "should be one of"},
		{"UDP", pools.SessionPersistence{Type: "HTTP_COOKIE"}, "not supported for UDP"},
		{"UDP", pools.SessionPersistence{Type: "SOURCE_IP"}, ""},
		{"TCP", pools.SessionPersistence{Type: "APP_COOKIE", CookieName: "JSESSIONID"}, ""},
		{"TCP", pools.SessionPersistence{}, ""}, // null: removed
	} {
		sp := tc.sp
		p, err := pools.Update(ctx, cl.lb, poolOf[tc.proto], pools.UpdateOpts{Persistence: &sp}).Extract()
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s %+v: %v", tc.proto, tc.sp, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s %+v: %v, want %q", tc.proto, tc.sp, err, tc.err)
		case tc.err == "" && p.Persistence != tc.sp:
			t.Errorf("%s: read back %+v, want %+v", tc.proto, p.Persistence, tc.sp)
		}
		time.Sleep(150 * time.Millisecond) // PENDING_UPDATE
	}
}
