package integration

import (
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/common/testenv"
	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

// A Service gets a classic ELB with its own security group and a rule on the node group;
// a new Node joins it and leaves again; deleting the Service leaves the cloud as it was before.
func TestLoadBalancerLifecycle(t *testing.T) {
	names := []string{"ip-10-0-4-41.ec2.internal", "ip-10-0-4-42.ec2.internal", "ip-10-0-4-43.ec2.internal"}
	ids := []string{machine(names[0], "10.0.4.41", "us-east-1a"), machine(names[1], "10.0.4.42", "us-east-1b")}
	for _, n := range names[:2] {
		newNode(t, n, "")
		initialised(t, n)
	}
	before := fake.Inventory()

	const ns = "default"
	svc := testenv.LoadBalancerService(ns, "it-elb", 80)
	if _, err := env.Client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lbName := lbname.AWSELB.Name(cluster, ns, "it-elb")
	var hostname string
	eventually(t, 60*time.Second, "ELB hostname in the Service status", func() (bool, error) {
		s, err := env.Client.CoreV1().Services(ns).Get(ctx, "it-elb", metav1.GetOptions{})
		if err != nil || len(s.Status.LoadBalancer.Ingress) == 0 {
			return false, err
		}
		hostname = s.Status.LoadBalancer.Ingress[0].Hostname
		return true, nil
	})
	lb, ok := fake.ClassicLB(lbName)
	if !ok {
		t.Fatalf("no ELB %s in the cloud: %v", lbName, fake.ClassicLBNames())
	}
	if hostname != strings.ToLower(lb.DNSName) {
		t.Errorf("status hostname %q, ELB DNS name %q", hostname, lb.DNSName)
	}
	if got := slices.Sorted(slices.Values(lb.Instances)); !slices.Equal(got, slices.Sorted(slices.Values(ids))) {
		t.Errorf("ELB instances %v, want %v", got, ids)
	}
	if len(lb.SecurityGroups) != 1 {
		t.Fatalf("ELB security groups %v, want its own one", lb.SecurityGroups)
	}
	nodes, _ := fake.Group(fakeaws.NodeGroup)
	if !slices.ContainsFunc(nodes.Rules, func(r fakeaws.Rule) bool { return r.SourceSG == lb.SecurityGroups[0] }) {
		t.Errorf("node group rules %v do not admit the ELB's group %s", nodes.Rules, lb.SecurityGroups[0])
	}

	// A third Node joins: one Register call, and the ELB has three instances.
	ids = append(ids, machine(names[2], "10.0.4.43", "us-east-1c"))
	newNode(t, names[2], "")
	initialised(t, names[2])
	eventually(t, 60*time.Second, "third instance registered", func() (bool, error) {
		lb, _ := fake.ClassicLB(lbName)
		return len(lb.Instances) == 3, nil
	})

	// The third Node goes: its instance is deregistered.
	if err := env.Client.CoreV1().Nodes().Delete(ctx, names[2], metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "third instance deregistered", func() (bool, error) {
		lb, _ := fake.ClassicLB(lbName)
		return len(lb.Instances) == 2 && !slices.Contains(lb.Instances, ids[2]), nil
	})

	if err := env.Client.CoreV1().Services(ns).Delete(ctx, "it-elb", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "Service gone (finalizer removed)", func() (bool, error) {
		_, err := env.Client.CoreV1().Services(ns).Get(ctx, "it-elb", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if after := fake.Inventory(); !slices.Equal(after, before) {
		t.Errorf("the cloud after delete differs from before:\nbefore %v\nafter  %v", before, after)
	}
}

// An invalid annotation value is refused with a Warning event that names it; nothing is created.
func TestUnsupportedAnnotationWarns(t *testing.T) {
	const ns = "default"
	svc := testenv.LoadBalancerService(ns, "it-nlb", 81)
	svc.Annotations = map[string]string{"service.beta.kubernetes.io/aws-load-balancer-proxy-protocol": "v2"}
	if _, err := env.Client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer env.Client.CoreV1().Services(ns).Delete(ctx, "it-nlb", metav1.DeleteOptions{})
	eventually(t, 60*time.Second, "a Warning event naming the annotation", func() (bool, error) {
		evs, err := env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=it-nlb"})
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(evs.Items, func(e v1.Event) bool {
			return e.Type == v1.EventTypeWarning && strings.Contains(e.Message, "service.beta.kubernetes.io/aws-load-balancer-proxy-protocol")
		}), nil
	})
	if _, ok := fake.ClassicLB(lbname.AWSELB.Name(cluster, ns, "it-nlb")); ok {
		t.Error("an ELB was created for a Service with an unsupported annotation")
	}
}

// Switching a Service from a classic ELB to an NLB and deleting it leaves the cloud exactly as
// it was: no ELB, security group, rule, target group or listener left behind.
func TestTypeChangeELBToNLBLeaksNothing(t *testing.T) {
	name := "ip-10-0-5-51.ec2.internal"
	id := machine(name, "10.0.5.51", "us-east-1a")
	newNode(t, name, "")
	initialised(t, name)
	before := fake.Inventory()

	const ns = "default"
	svcs := env.Client.CoreV1().Services(ns)
	if _, err := svcs.Create(ctx, testenv.LoadBalancerService(ns, "it-switch", 8080), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lbName := lbname.AWSELB.Name(cluster, ns, "it-switch")
	eventually(t, 60*time.Second, "classic ELB", func() (bool, error) {
		_, ok := fake.ClassicLB(lbName)
		return ok, nil
	})
	s, err := svcs.Get(ctx, "it-switch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Annotations = map[string]string{"service.beta.kubernetes.io/aws-load-balancer-type": "nlb"}
	if _, err := svcs.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the NLB's DNS name in the status and the ELB gone", func() (bool, error) {
		nlb, _, tgs, ok := fake.NLBByName(lbName)
		if !ok || len(tgs) != 1 || !slices.Contains(tgs[0].Targets, id) {
			return false, nil
		}
		s, err := svcs.Get(ctx, "it-switch", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, classic := fake.ClassicLB(lbName)
		return !classic && len(s.Status.LoadBalancer.Ingress) == 1 && s.Status.LoadBalancer.Ingress[0].Hostname == strings.ToLower(nlb.DNSName), nil
	})
	if err := svcs.Delete(ctx, "it-switch", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "Service gone (finalizer removed)", func() (bool, error) {
		_, err := svcs.Get(ctx, "it-switch", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if after := fake.Inventory(); !slices.Equal(after, before) {
		t.Errorf("the cloud after the type change and delete differs from before:\nbefore %v\nafter  %v", before, after)
	}
}
