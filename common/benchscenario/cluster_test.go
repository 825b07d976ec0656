package benchscenario

import "testing"

func TestDiffAndFormat(t *testing.T) {
	before := map[string]int{"ec2:DescribeInstances": 3, "elb:CreateLoadBalancer": 1}
	after := map[string]int{"ec2:DescribeInstances": 5, "elb:CreateLoadBalancer": 1, "elbv2:DescribeTags": 2}
	if got, want := Format(Diff(before, after)), "ec2:DescribeInstances=2 elbv2:DescribeTags=2"; got != want {
		t.Errorf("Format(Diff) = %q, want %q (unchanged counters left out)", got, want)
	}
}
