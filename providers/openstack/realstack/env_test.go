package realstack_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
)

// stack is the running services as build/realstack/realstack.sh left them: the IDs and ports
// of ids.env, and gophercloud clients of the cluster's user that go to the services directly
// (what the tests read and break is not counted as the provider's).
type stack struct {
	dir string
	ids map[string]string
	// compute, network and lb act as the cluster's user (project kubernetes).
	compute, network, lb *gophercloud.ServiceClient
}

var rs *stack

// loadStack reads $CCM_REALSTACK_DIR (default ../../../bin/realstack): a missing stack is a
// failure, not a skip (make realstack starts it).
func loadStack() (*stack, error) {
	dir := os.Getenv("CCM_REALSTACK_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "bin", "realstack")
	}
	f, err := os.Open(filepath.Join(dir, "ids.env"))
	if err != nil {
		return nil, fmt.Errorf("no real OpenStack services (%w): run make realstack first, or set CCM_REALSTACK_DIR", err)
	}
	defer f.Close()
	s := &stack{dir: dir, ids: map[string]string{}}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "="); ok && !strings.HasPrefix(k, "#") {
			s.ids[k] = strings.Trim(v, `"'`)
		}
	}
	for _, k := range []string{"AUTH_URL", "PASSWORD", "CCM_USERNAME", "K8S_SUBNET_ID", "PUBLIC_NET_ID", "NOVA_PORT", "NEUTRON_PORT", "OCTAVIA_PORT", "KEYSTONE_PORT"} {
		if s.ids[k] == "" {
			return nil, fmt.Errorf("%s/ids.env has no %s", dir, k)
		}
	}
	ctx := context.Background()
	pc, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: s.ids["AUTH_URL"], Username: s.ids["CCM_USERNAME"],
		Password: s.ids["PASSWORD"], DomainName: "Default", TenantName: "kubernetes", AllowReauth: true})
	if err != nil {
		return nil, fmt.Errorf("logging in as %s: %w", s.ids["CCM_USERNAME"], err)
	}
	eo := gophercloud.EndpointOpts{Region: s.ids["REGION"]}
	if s.compute, err = openstack.NewComputeV2(pc, eo); err != nil {
		return nil, err
	}
	if s.network, err = openstack.NewNetworkV2(pc, eo); err != nil {
		return nil, err
	}
	if s.lb, err = openstack.NewLoadBalancerV2(pc, eo); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *stack) port(name string) int {
	p, _ := strconv.Atoi(s.ids[name])
	return p
}

// ports are the services' ports by the recorder's prefixes.
func (s *stack) ports() map[string]int {
	return map[string]int{"keystone": s.port("KEYSTONE_PORT"), "nova": s.port("NOVA_PORT"), "neutron": s.port("NEUTRON_PORT"),
		"octavia": s.port("OCTAVIA_PORT"), "glance": s.port("GLANCE_PORT"), "placement": s.port("PLACEMENT_PORT")}
}

// cloudConf is a ccm cloud.conf for the cluster's user through the recorder r.
func (s *stack) cloudConf(r *recorder, extra string) string {
	return fmt.Sprintf(`[Global]
auth-url = %s/v3
username = %s
password = %q
tenant-name = kubernetes
domain-name = Default
region = %s

[LoadBalancer]
subnet-id = %s
floating-network-id = %s
pending-retry = 500ms
%s`, r.base("keystone"), s.ids["CCM_USERNAME"], s.ids["PASSWORD"], s.ids["REGION"], s.ids["K8S_SUBNET_ID"], s.ids["PUBLIC_NET_ID"], extra)
}

func TestMain(m *testing.M) {
	var err error
	if rs, err = loadStack(); err != nil {
		fmt.Fprintln(os.Stderr, "realstack:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
