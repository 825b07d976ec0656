package dummy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

// calls counts the API calls the fake API server (the dummy cloud's store: ConfigMaps, and the
// Service list of the first load) served since the last count, as reads and writes.
type calls struct {
	cs   *fake.Clientset
	seen int
}

func (c *calls) next() (reads, writes int, verbs map[string]int) {
	acts := c.cs.Actions()
	verbs = map[string]int{}
	for _, a := range acts[c.seen:] {
		verbs[a.GetVerb()+" "+a.GetResource().Resource]++
		switch a.GetVerb() {
		case "get", "list", "watch":
			reads++
		default:
			writes++
		}
	}
	c.seen = len(acts)
	return reads, writes, verbs
}

// TestSyncCost counts, at the API server holding the ConfigMap store, what syncs of unchanged
// load balancers cost: the first sync of every Service after a restart (one load for all), a
// periodic resync (one read of each record's shard), and a repair of a record another writer
// changed in its ConfigMap (one write).
func TestSyncCost(t *testing.T) {
	const n = 40
	ctx := context.Background()
	cs := fake.NewClientset()
	cloud := func() *Cloud {
		c, err := New(strings.NewReader("[Global]\nregion = r1\n\n[Pool \"p\"]\ncidr = 10.64.0.0/24\n"))
		if err != nil {
			t.Fatal(err)
		}
		c.client = cs // what Initialize sets: the store is ConfigMaps in kube-system
		return c
	}
	lb, _ := cloud().LoadBalancer()
	nodes := []*v1.Node{nodeNamed("n1"), nodeNamed("n2")}
	svcs := make([]*v1.Service, n)
	for i := range svcs {
		svcs[i] = &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "cost", Name: fmt.Sprintf("svc-%d", i), UID: types.UID(fmt.Sprintf("uid-%d", i))},
			Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
		st, err := lb.EnsureLoadBalancer(ctx, "cost", svcs[i], nodes)
		if err != nil {
			t.Fatal(err)
		}
		svcs[i].Status.LoadBalancer = *st
	}
	counter := &calls{cs: cs}
	counter.next()
	restarted, _ := cloud().LoadBalancer()
	syncAll := func(what string) int {
		for _, svc := range svcs {
			if _, err := restarted.EnsureLoadBalancer(ctx, "cost", svc, nodes); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
		reads, writes, verbs := counter.next()
		t.Logf("%s, %d unchanged LBs: %d writes, %d reads (%.2f per LB): %v", what, n, writes, reads, float64(reads)/n, verbs)
		if writes != 0 {
			t.Errorf("%s: %d writes, want 0", what, writes)
		}
		return reads
	}
	// One load: a get of each shard and one list of Services.
	if reads := syncAll("first sync after a restart"); reads != configMapShards+1 {
		t.Errorf("restart: %d reads, want %d (one load)", reads, configMapShards+1)
	}
	if reads := syncAll("periodic resync"); reads != n {
		t.Errorf("resync: %d reads, want %d (each record compared with the store's)", reads, n)
	}

	// Another writer changes a record's ports in its ConfigMap.
	st := newConfigMapStore(cs, "kube-system", "cost")
	k := recordKey("cost", svcs[0])
	cms := cs.CoreV1().ConfigMaps("kube-system")
	cm, err := cms.Get(ctx, st.shardOf(k), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var r Record
	if err := json.Unmarshal([]byte(cm.Data[st.dataKey(k)]), &r); err != nil {
		t.Fatal(err)
	}
	r.Ports = []string{"TCP/8080"}
	b, _ := json.Marshal(r)
	cm.Data[st.dataKey(k)] = string(b)
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	counter.next()
	if _, err := restarted.EnsureLoadBalancer(ctx, "cost", svcs[0], nodes); err != nil {
		t.Fatal(err)
	}
	reads, writes, verbs := counter.next()
	t.Logf("repair of one record: %d writes, %d reads: %v", writes, reads, verbs)
	if writes != 1 || reads != 1 {
		t.Errorf("repair: %d writes and %d reads, want 1 and 1 (read the shard, write it back)", writes, reads)
	}
	got, _, _ := st.Get(ctx, k)
	if strings.Join(got.Ports, ",") != "TCP/80" {
		t.Errorf("after the repair the record's ports are %v, want [TCP/80]", got.Ports)
	}
}
