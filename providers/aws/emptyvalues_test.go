package aws

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// Every annotation upstream reads, with "" (what a chart renders for an unset value) and some
// other shapes upstream reads its own way ("True", " true", "1", " 60"), against upstream's
// reading: unset (the options are those of the Service without it, and no Warning), refused
// (naming the annotation, as upstream's error does), or the value's effect. Each row cites the
// upstream code it follows (cloud-provider-aws, pkg/providers/v1).
func TestAnnotationValuesAsUpstream(t *testing.T) {
	const unset, refused = "unset", "refused"
	cert := map[string]string{annotationPrefix + annSSLCert: "arn:aws:acm:us-east-1:1:certificate/x"}
	bucket := map[string]string{annotationPrefix + annAccessLogBucket: "logs"}
	for _, c := range []struct {
		suffix, value string
		nlb           bool
		with          map[string]string
		want          string // unset, refused, or what check tests
		check         func(*lbOptions) bool
	}{
		{suffix: annType, value: "", want: unset},     // aws_loadbalancer.go:85: only "nlb"
		{suffix: annInternal, value: "", want: unset}, // aws.go:2455-2460: "" is not internal
		{suffix: annInternal, value: " false", want: "internal", check: func(o *lbOptions) bool { return o.Internal }},                          // aws.go:2457: only "false" exactly
		{suffix: annSubnets, value: "", want: refused},                                                                                          // aws.go:1820, 1829: "unable to resolve empty subnet slice"
		{suffix: annSubnets, value: " , ", want: refused},                                                                                       // aws.go:1795: trimmed items, none left
		{suffix: annSecurityGroup, value: "", want: unset},                                                                                      // aws.go:2000-2003: getSGListFromAnnotation("") is empty, own group
		{suffix: annSecurityGroup, value: " , ", want: unset},                                                                                   // aws.go:1952-1960: items trimmed, empty ones dropped
		{suffix: annSecurityGroup, value: "", nlb: true, want: unset},                                                                           // aws.go:2304: empty BYO list
		{suffix: annExtraGroups, value: "", want: unset},                                                                                        // aws.go:2021
		{suffix: annSSLCert, value: "", want: unset},                                                                                            // aws.go:2110: certID != ""
		{suffix: annSSLCert, value: "", nlb: true, want: unset},                                                                                 // aws.go:2424: certificateARN != ""
		{suffix: annSSLCert, value: " ", want: refused},                                                                                         // aws.go:2110: " " is sent as the certificate, which ELB refuses
		{suffix: annSSLPorts, value: "", with: cert, want: "every port TLS", check: func(o *lbOptions) bool { return sslPorts(o) == "443,80" }}, // aws.go:1937: "" is every port
		{suffix: annSSLPorts, value: "*", with: cert, want: "every port TLS", check: func(o *lbOptions) bool { return sslPorts(o) == "443,80" }},
		{suffix: annSSLPorts, value: "80, 443", with: cert, want: "80 only", check: func(o *lbOptions) bool { return sslPorts(o) == "80" && len(o.Advice) == 1 }},    // aws.go:1943-1947: " 443" is a name
		{suffix: annSSLPorts, value: "443,*", with: cert, want: "443 only", check: func(o *lbOptions) bool { return sslPorts(o) == "443" }},                          // "*" is only "*" alone
		{suffix: annSSLPorts, value: "http,+443", with: cert, want: "both", check: func(o *lbOptions) bool { return sslPorts(o) == "443,80" && len(o.Advice) == 0 }}, // strconv.Atoi takes "+443"
		{suffix: annSSLPolicy, value: "", with: cert, want: refused},                                                                                                 // aws.go:2730: a policy referring to "" is created, ELB refuses it
		{suffix: annSSLPolicy, value: "", nlb: true, with: cert, want: unset},                                                                                        // aws_loadbalancer.go:739: no SslPolicy sent
		{suffix: annSSLPolicy, value: " ELBSecurityPolicy-2016-08", with: cert, want: refused},                                                                       // sent as written; ELB has no such policy
		{suffix: annBackend, value: "", want: unset},                                                                                                                 // aws.go:2112, 2122
		{suffix: annCrossZone, value: "", want: unset},                                                                                                               // aws.go:2661-2662
		{suffix: annCrossZone, value: "", nlb: true, want: unset},                                                                                                    // aws_loadbalancer.go:448-449
		{suffix: annCrossZone, value: "True", want: "on", check: func(o *lbOptions) bool { return o.CrossZone }},                                                     // aws.go:2663: strconv.ParseBool
		{suffix: annCrossZone, value: "1", want: "on", check: func(o *lbOptions) bool { return o.CrossZone }},
		{suffix: annCrossZone, value: " true", want: refused}, // ParseBool does not trim
		{suffix: annExtraTags, value: "", want: unset},        // aws_loadbalancer.go:122-128: empty map
		{suffix: annExtraTags, value: "k=v=x, team = a,=v,flag", want: "k=v, \"team \"=\" a\", flag", check: func(o *lbOptions) bool { // aws_loadbalancer.go:122-146
			return reflect.DeepEqual(o.ExtraTags, map[string]string{"k": "v", "team ": " a", "flag": ""})
		}},
		{suffix: annTGAttributes, value: "a=1=2, b = 2", nlb: true, want: "a=1, \"b \"=\" 2\"", check: func(o *lbOptions) bool { // aws_loadbalancer.go:658
			return reflect.DeepEqual(o.TGAttributes, map[string]string{"a": "1", "b ": " 2"})
		}},
		{suffix: annTGAttributes, value: "a", nlb: true, want: refused}, // aws_loadbalancer.go:675: "" is written, ELB refuses it
		{suffix: annNodeLabels, value: "", want: unset},                 // aws_loadbalancer.go:1833-1835: every Node
		{suffix: annNodeLabels, value: "role=", want: "role, any value", check: func(o *lbOptions) bool { return o.NodeLabels.selects(map[string]string{"role": "web"}) }}, // 1843
		{suffix: annHCHealthy, value: "", want: refused},            // aws_loadbalancer.go:1541-1544: ParseInt("")
		{suffix: annHCHealthy, value: "", nlb: true, want: refused}, // aws.go:2163-2166
		{suffix: annHCHealthy, value: " 3", want: refused},          // ParseInt does not trim
		{suffix: annHCHealthy, value: "3", want: "3", check: func(o *lbOptions) bool { return o.HC.Healthy == 3 }},
		{suffix: annHCUnhealthy, value: "", want: refused},
		{suffix: annHCTimeout, value: "", want: refused},
		{suffix: annHCInterval, value: "", want: refused},
		{suffix: annHCInterval, value: "", nlb: true, want: refused},
		{suffix: annHCProtocol, value: "", want: refused},                 // aws_loadbalancer.go:1580, 1600: target ":<port>", ELB refuses
		{suffix: annHCProtocol, value: "", nlb: true, want: refused},      // aws.go:2199-2209: "Unsupported health check protocol"
		{suffix: annHCProtocol, value: " http", nlb: true, want: refused}, // aws.go:2200: ToUpper, not trimmed
		{suffix: annHCProtocol, value: "http", nlb: true, want: "HTTP", check: func(o *lbOptions) bool { return o.HC.Protocol == "HTTP" }},
		{suffix: annHCPort, value: "", want: refused},            // aws_loadbalancer.go:1583-1587: ParseInt("")
		{suffix: annHCPort, value: "", nlb: true, want: refused}, // aws.go:2252-2255
		{suffix: annHCPort, value: " 8080", want: refused},
		{suffix: annHCPath, value: "", want: unset},            // aws_loadbalancer.go:1595: s != ""
		{suffix: annProxyProtocol, value: "", want: unset},     // aws.go:2568
		{suffix: annProxyProtocol, value: " *", want: refused}, // aws.go:2569-2570
		{suffix: annIdleTimeout, value: "", want: unset},       // aws.go:2649
		{suffix: annIdleTimeout, value: " 60", want: refused},  // aws.go:2650: ParseInt
		{suffix: annIdleTimeout, value: "120", want: "120", check: func(o *lbOptions) bool { return o.Attrs.IdleTimeout == 120 }},
		{suffix: annDraining, value: "", want: unset}, // aws.go:2623
		{suffix: annDraining, value: "True", want: "on", check: func(o *lbOptions) bool { return o.Attrs.Draining }},
		{suffix: annDraining, value: " true", want: refused},
		{suffix: annDrainingTimeout, value: "", want: unset}, // aws.go:2636
		{suffix: annDrainingTimeout, value: " 30", want: refused},
		{suffix: annAccessLog, value: "", want: unset},            // aws.go:2598
		{suffix: annAccessLog, value: "", nlb: true, want: unset}, // aws_loadbalancer.go:465
		{suffix: annAccessLog, value: "1", with: bucket, want: "on", check: func(o *lbOptions) bool { return o.Attrs.AccessLog }},
		{suffix: annAccessLog, value: " true", with: bucket, want: refused},
		{suffix: annAccessLogEmit, value: "", want: unset}, // aws.go:2585
		{suffix: annAccessLogEmit, value: " 5", want: refused},
		{suffix: annAccessLogBucket, value: "", want: unset},             // aws.go:2611
		{suffix: annAccessLogPrefix, value: "", want: unset},             // aws.go:2617
		{suffix: annTGAttributes, value: "", nlb: true, want: unset},     // aws_loadbalancer.go:658: empty map, nothing written
		{suffix: annEIPAllocations, value: "", nlb: true, want: unset},   // see the report: upstream's Split gives [""], refused at creation only
		{suffix: annPrivateAddresses, value: "", nlb: true, want: unset}, // likewise
	} {
		base := map[string]string{}
		if c.nlb {
			base[annotationPrefix+annType] = "nlb"
		}
		for k, v := range c.with {
			base[k] = v
		}
		ann := map[string]string{annotationPrefix + c.suffix: c.value}
		for k, v := range base {
			ann[k] = v
		}
		name := c.suffix + "=" + strings.ReplaceAll(c.value, " ", "␠")
		if c.nlb {
			name += " (nlb)"
		}
		got, err := parseOptions(svcWith(ann))
		switch c.want {
		case refused:
			if err == nil || !strings.Contains(err.Error(), annotationPrefix+c.suffix) {
				t.Errorf("%s: %v; want refused naming the annotation, as upstream refuses it", name, err)
			}
		case unset:
			without, werr := parseOptions(svcWith(base))
			if err != nil || werr != nil {
				t.Errorf("%s: %v (without it: %v); want it read as unset, as upstream reads it", name, err, werr)
			} else if !reflect.DeepEqual(got, without) {
				t.Errorf("%s: options\n%+v\nwant those without it\n%+v", name, got, without)
			}
		default:
			if err != nil || !c.check(got) {
				t.Errorf("%s: %v, options %+v; want %s", name, err, got, c.want)
			}
		}
	}
	// The legacy annotation, read by common/sourceranges as upstream's servicehelpers does
	// (trimmed; empty is every IPv4 client).
	for _, v := range []string{"", "  "} {
		o, err := parseOptions(svcWith(map[string]string{annSourceRanges: v}))
		if err != nil || !reflect.DeepEqual(o.SourceRanges, []string{"0.0.0.0/0"}) {
			t.Errorf("%s=%q: %v, %v; want every IPv4 client", annSourceRanges, v, err, o)
		}
	}
}

// sslPorts lists the ports of svcWith that terminate TLS.
func sslPorts(o *lbOptions) string {
	var out []string
	for _, p := range svcWith(nil).Spec.Ports {
		if o.sslPort(p) {
			out = append(out, strconv.Itoa(int(p.Port)))
		}
	}
	return strings.Join(out, ",")
}
