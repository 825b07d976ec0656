package upstream

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	v2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/sgrules"
)

var (
	id  = ownership.Identity{Cluster: "prod", Namespace: "shop", Name: "web", UID: "6f1c2d3e-4b5a-4c6d-8e7f-000000000001"}
	svc = &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "6f1c2d3e-4b5a-4c6d-8e7f-000000000001"}}
	up  = "a6f1c2d3e4b5a4c6d8e7f00000000000"
)

// The tag shapes that prove an object upstream's for a Service of this cluster.
func TestOwned(t *testing.T) {
	id := ownership.Identity{Cluster: "prod", Namespace: "shop", Name: "web", UID: "u1"}
	for _, c := range []struct {
		name string
		tags map[string]string
		want bool
	}{
		{"cluster tag", map[string]string{"kubernetes.io/cluster/prod": "owned", "kubernetes.io/service-name": "shop/web"}, true},
		{"both tags", map[string]string{"kubernetes.io/cluster/prod": "owned", "KubernetesCluster": "prod", "kubernetes.io/service-name": "shop/web"}, true},
		{"legacy tag only", map[string]string{"KubernetesCluster": "prod", "kubernetes.io/service-name": "shop/web"}, true},
		{"ccm's tags", map[string]string{"kubernetes.io/cluster/prod": "owned", "kubernetes.io/service-name": "shop/web", "kubernetes.io/service-uid": "u1"}, true},
		{"another cluster", map[string]string{"kubernetes.io/cluster/staging": "owned", "kubernetes.io/service-name": "shop/web"}, false},
		{"legacy tag, another cluster's tag", map[string]string{"KubernetesCluster": "prod", "kubernetes.io/cluster/staging": "owned", "kubernetes.io/service-name": "shop/web"}, false},
		{"legacy tag of another cluster", map[string]string{"KubernetesCluster": "staging", "kubernetes.io/service-name": "shop/web"}, false},
		{"shared", map[string]string{"kubernetes.io/cluster/prod": "shared", "kubernetes.io/service-name": "shop/web"}, false},
		{"another Service", map[string]string{"kubernetes.io/cluster/prod": "owned", "kubernetes.io/service-name": "shop/api"}, false},
		{"no Service tag", map[string]string{"kubernetes.io/cluster/prod": "owned"}, false},
		{"another UID", map[string]string{"kubernetes.io/cluster/prod": "owned", "kubernetes.io/service-name": "shop/web", "kubernetes.io/service-uid": "u0"}, false},
	} {
		if got := Owned(id, c.tags); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// A load balancer is the Service's by ccm's tags under any name; by tags only upstream writes
// (a legacy cluster's) only under upstream's name for it.
func TestCheckLBAndOnly(t *testing.T) {
	upTags := map[string]string{"KubernetesCluster": "prod", "kubernetes.io/service-name": "shop/web"}
	for _, c := range []struct {
		name, lb string
		tags     map[string]string
		ok       bool
	}{
		{"ccm's tags, ccm's name", "ccm-prod-abc", id.Tags(), true},
		{"upstream's tags, upstream's name", up, upTags, true},
		{"upstream's tags, another name", "a00000000000000000000000000000ff", upTags, false},
		{"upstream's tags, ccm's name", "ccm-prod-abc", upTags, false},
		{"no tags, upstream's name", up, map[string]string{}, false},
		{"legacy tags of another cluster, upstream's name", up, map[string]string{"KubernetesCluster": "staging", "kubernetes.io/service-name": "shop/web"}, false},
	} {
		if err := CheckLB(id, svc, c.lb, c.tags); (err == nil) != c.ok {
			t.Errorf("%s: CheckLB = %v, want ok %v", c.name, err, c.ok)
		}
	}
	if LBName(svc) != up || !IsLBName(up) || IsLBName("ccm-prod-abc") {
		t.Errorf("LBName = %q, IsLBName(%q) = %v", LBName(svc), up, IsLBName(up))
	}
	if LBName(&v1.Service{}) != "" {
		t.Errorf("a Service without a UID has an upstream name")
	}
	if Only(up, svc) != up || Only("ccm-prod-abc", svc) != "" || Only("", &v1.Service{}) != "" {
		t.Errorf("Only keeps a name that is not the Service's upstream name")
	}
}

func group(name, desc string, tags map[string]string) *types.SecurityGroup {
	g := &types.SecurityGroup{GroupName: aws.String(name), Description: aws.String(desc)}
	for k, v := range tags {
		g.Tags = append(g.Tags, types.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	return g
}

// Upstream's groups carry the cluster's tag only: name and description prove the Service.
func TestUpstreamGroups(t *testing.T) {
	owned := map[string]string{"kubernetes.io/cluster/prod": "owned"}
	elbDesc := "Security group for Kubernetes ELB " + up + " (shop/web)"
	nlbName := NLBGroupName("prod", svc)
	noUID := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	for _, c := range []struct {
		name string
		got  bool
		want bool
	}{
		{"ELB group", IsELBGroup(id, svc, up, group("k8s-elb-"+up, elbDesc, owned)), true},
		{"ELB group of another cluster", IsELBGroup(id, svc, up, group("k8s-elb-"+up, elbDesc, map[string]string{"kubernetes.io/cluster/other": "owned"})), false},
		{"ELB group, other description", IsELBGroup(id, svc, up, group("k8s-elb-"+up, "Security group for Kubernetes ELB "+up+" (shop/api)", owned)), false},
		{"ELB group of ccm's name", IsELBGroup(id, svc, "ccm-prod-abc", group("k8s-elb-ccm-prod-abc", "Security group for Kubernetes ELB ccm-prod-abc (shop/web)", owned)), false},
		{"NLB group", IsNLBGroup(id, "prod", svc, group(nlbName, NLBGroupDescription, owned)), true},
		{"NLB group of another cluster name", IsNLBGroup(id, "staging", svc, group(nlbName, NLBGroupDescription, owned)), false},
		{"NLB group, shared tag", IsNLBGroup(id, "prod", svc, group(nlbName, NLBGroupDescription, map[string]string{"kubernetes.io/cluster/prod": "shared"})), false},
		{"NLB group, other description", IsNLBGroup(id, "prod", svc, group(nlbName, "made by hand", owned)), false},
		{"NLB group of a Service without a UID", IsNLBGroup(id, "prod", noUID, group(NLBGroupName("prod", noUID), NLBGroupDescription, owned)), false},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	if want := "k8s-shop-web-"; nlbName[:len(want)] != want || len(nlbName) != len(want)+10 {
		t.Errorf("NLBGroupName = %q", nlbName)
	}
	long := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "ingress-nginx", UID: "u"}}
	if n := NLBGroupName("prod", long); n[:22] != "k8s-kubesyst-ingressn-" {
		t.Errorf("NLBGroupName keeps more than 8 alphanumerics of a part: %q", n)
	}
}

// Only the client and health rules naming the Service's own upstream NLB are upstream's.
func TestNLBRule(t *testing.T) {
	r := func(desc string) sgrules.Rule {
		return sgrules.Rule{Proto: "tcp", From: 80, To: 80, CIDR: "0.0.0.0/0", Desc: desc}
	}
	for _, c := range []struct {
		name string
		up   string
		r    sgrules.Rule
		want bool
	}{
		{"client rule", up, r("kubernetes.io/rule/nlb/client=" + up), true},
		{"health rule", up, r("kubernetes.io/rule/nlb/health=" + up), true},
		{"another NLB's rule", up, r("kubernetes.io/rule/nlb/client=a00000000000000000000000000000ff"), false},
		{"no upstream NLB", "", r("kubernetes.io/rule/nlb/client="), false},
		{"a group rule", up, sgrules.Rule{Proto: "tcp", From: 80, To: 80, Group: "sg-1", Desc: "kubernetes.io/rule/nlb/client=" + up}, false},
	} {
		if got := NLBRule(c.up, c.r); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// A target group is the Service's by ccm's tags under any name; by upstream's tags only under
// upstream's name shape for target groups.
func TestOwnsTG(t *testing.T) {
	upTags := map[string]string{"KubernetesCluster": "prod", "kubernetes.io/service-name": "shop/web"}
	upName := "k8s-shop-web-0123456789"
	for _, c := range []struct {
		name, tg string
		tags     map[string]string
		want     bool
	}{
		{"ccm's tags", "k8s-tg-prod-web-tcp30080", id.Tags(), true},
		{"upstream's tags, upstream's name shape", upName, upTags, true},
		{"upstream's tags, ccm's name", "k8s-tg-prod-web-tcp30080", upTags, false},
		{"upstream's name shape, another Service's tags", upName, map[string]string{"KubernetesCluster": "prod", "kubernetes.io/service-name": "shop/api"}, false},
		{"upstream's name shape, no tags", upName, map[string]string{}, false},
	} {
		tg := v2types.TargetGroup{TargetGroupName: aws.String(c.tg)}
		if got := OwnsTG(id, tg, c.tags); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if !IsTGName(upName) || IsTGName("k8s-tg-prod-web-tcp30080") || IsTGName("k8s-shop-web-012345678g") {
		t.Errorf("IsTGName takes a name of another shape for upstream's")
	}
}
