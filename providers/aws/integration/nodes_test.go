package integration

import (
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/ccm-project/ccm/common/testenv"
	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

func TestNodeInitByDNSNameAndProviderID(t *testing.T) {
	byName := "ip-10-0-0-11.ec2.internal"
	idA := machine(byName, "10.0.0.11", "us-east-1a")
	idB := machine("ip-10-0-1-12.ec2.internal", "10.0.1.12", "us-east-1b")
	newNode(t, byName, "")
	// Node b's name is not its DNS name: only its providerID (the short form) finds it.
	newNode(t, "node-b-by-id", "aws:////"+idB)

	for _, tc := range []struct{ name, providerID, zone, ip string }{
		{byName, "aws:///us-east-1a/" + idA, "us-east-1a", "10.0.0.11"},
		{"node-b-by-id", "aws:////" + idB, "us-east-1b", "10.0.1.12"},
	} {
		n := initialised(t, tc.name)
		if n.Spec.ProviderID != tc.providerID {
			t.Errorf("%s providerID = %q, want %q", tc.name, n.Spec.ProviderID, tc.providerID)
		}
		for label, want := range map[string]string{v1.LabelTopologyZone: tc.zone, v1.LabelTopologyRegion: "us-east-1", v1.LabelInstanceTypeStable: "t3.medium"} {
			if got := n.Labels[label]; got != want {
				t.Errorf("%s label %s = %q, want %q", tc.name, label, got, want)
			}
		}
		if len(n.Status.Addresses) == 0 || n.Status.Addresses[0] != (v1.NodeAddress{Type: v1.NodeInternalIP, Address: tc.ip}) {
			t.Errorf("%s addresses = %v, want InternalIP %s first", tc.name, n.Status.Addresses, tc.ip)
		}
	}
}

// A terminated instance's NotReady Node is deleted, but not while EC2 answers with errors.
func TestTerminatedInstanceNodeDeletedNotDuringErrors(t *testing.T) {
	name := "ip-10-0-2-21.ec2.internal"
	id := machine(name, "10.0.2.21", "us-east-1c")
	newNode(t, name, "")
	initialised(t, name)

	fake.SetFaults(fakeaws.Faults{FailOps: map[string]bool{"DescribeInstances": true}})
	fake.SetInstanceState(id, "terminated")
	if err := testenv.SetNodeReady(ctx, env.Client, name, v1.ConditionUnknown); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Second) // > 3 node-monitor periods and the 3s confirmation window
	if _, err := node(name); err != nil {
		fake.SetFaults(fakeaws.Faults{})
		t.Fatalf("Node deleted while DescribeInstances failed: %v", err)
	}
	if fake.Calls()["ec2:DescribeInstances"] == 0 {
		t.Fatal("the ccm never asked EC2")
	}
	fake.SetFaults(fakeaws.Faults{})
	eventually(t, 60*time.Second, name+" deleted", func() (bool, error) {
		_, err := node(name)
		return apierrors.IsNotFound(err), nil
	})
}

// The credentials' secret never reaches the log, even at --v=10.
func TestSecretNotLogged(t *testing.T) {
	name := "ip-10-0-3-31.ec2.internal"
	machine(name, "10.0.3.31", "us-east-1a")
	newNode(t, name, "")
	initialised(t, name)
	if fake.Calls()["ec2:DescribeInstances"] == 0 {
		t.Fatal("no EC2 call was made; the check would prove nothing")
	}
	log, err := os.ReadFile(ccm.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "AWS cloud ready") {
		t.Fatalf("the log is not the aws ccm's (no start line); tail:\n%s", ccm.Tail(20))
	}
	if strings.Contains(string(log), secret) {
		t.Fatal("the AWS secret access key appears in the ccm log")
	}
}

// EC2 is eventually consistent: a new instance may be invisible for a while. Its Node is
// initialised once EC2 lists it, and nothing is deleted meanwhile.
func TestNewInstanceNotYetVisible(t *testing.T) {
	name := "ip-10-0-7-71.ec2.internal"
	fake.SetFaults(fakeaws.Faults{Visibility: 4 * time.Second})
	start := time.Now()
	id := machine(name, "10.0.7.71", "us-east-1c")
	fake.SetFaults(fakeaws.Faults{})
	newNode(t, name, "")
	n := initialised(t, name)
	if time.Since(start) < 4*time.Second {
		t.Errorf("initialised after %v, before EC2 listed the instance", time.Since(start))
	}
	if want := "aws:///us-east-1c/" + id; n.Spec.ProviderID != want {
		t.Errorf("providerID %q, want %q", n.Spec.ProviderID, want)
	}
}
