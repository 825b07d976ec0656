package annotations

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
	cert := map[string]string{Prefix + SSLCert: "arn:aws:acm:us-east-1:1:certificate/x"}
	bucket := map[string]string{Prefix + AccessLogBucket: "logs"}
	for _, c := range []struct {
		suffix, value string
		nlb           bool
		with          map[string]string
		want          string // unset, refused, or what check tests
		check         func(*Options) bool
	}{
		{suffix: Type, value: "", want: unset},     // aws_loadbalancer.go:85: only "nlb"
		{suffix: Internal, value: "", want: unset}, // aws.go:2455-2460: "" is not internal
		{suffix: Internal, value: " false", want: "internal", check: func(o *Options) bool { return o.Internal }}, // aws.go:2457: only "false" exactly
		{suffix: Subnets, value: "", want: refused},                                                               // aws.go:1820, 1829: "unable to resolve empty subnet slice"
		{suffix: Subnets, value: " , ", want: refused},                                                            // aws.go:1795: trimmed items, none left
		{suffix: SecurityGroup, value: "", want: unset},                                                           // aws.go:2000-2003: getSGListFromAnnotation("") is empty, own group
		{suffix: SecurityGroup, value: " , ", want: unset},                                                        // aws.go:1952-1960: items trimmed, empty ones dropped
		{suffix: SecurityGroup, value: "", nlb: true, want: unset},                                                // aws.go:2304: empty BYO list
		{suffix: ExtraGroups, value: "", want: unset},                                                             // aws.go:2021
		{suffix: SSLCert, value: "", want: unset},                                                                 // aws.go:2110: certID != ""
		{suffix: SSLCert, value: "", nlb: true, want: unset},                                                      // aws.go:2424: certificateARN != ""
		{suffix: SSLCert, value: " ", want: refused},                                                              // aws.go:2110: " " is sent as the certificate, which ELB refuses
		{suffix: SSLPorts, value: "", with: cert, want: "every port TLS", check: func(o *Options) bool { return sslPorts(o) == "443,80" }}, // aws.go:1937: "" is every port
		{suffix: SSLPorts, value: "*", with: cert, want: "every port TLS", check: func(o *Options) bool { return sslPorts(o) == "443,80" }},
		{suffix: SSLPorts, value: "80, 443", with: cert, want: "80 only", check: func(o *Options) bool { return sslPorts(o) == "80" && len(o.Advice) == 1 }},    // aws.go:1943-1947: " 443" is a name
		{suffix: SSLPorts, value: "443,*", with: cert, want: "443 only", check: func(o *Options) bool { return sslPorts(o) == "443" }},                          // "*" is only "*" alone
		{suffix: SSLPorts, value: "http,+443", with: cert, want: "both", check: func(o *Options) bool { return sslPorts(o) == "443,80" && len(o.Advice) == 0 }}, // strconv.Atoi takes "+443"
		{suffix: SSLPolicy, value: "", with: cert, want: refused},                                                                                               // aws.go:2730: a policy referring to "" is created, ELB refuses it
		{suffix: SSLPolicy, value: "", nlb: true, with: cert, want: unset},                                                                                      // aws_loadbalancer.go:739: no SslPolicy sent
		{suffix: SSLPolicy, value: " ELBSecurityPolicy-2016-08", with: cert, want: refused},                                                                     // sent as written; ELB has no such policy
		{suffix: Backend, value: "", want: unset},                                                           // aws.go:2112, 2122
		{suffix: CrossZone, value: "", want: unset},                                                         // aws.go:2661-2662
		{suffix: CrossZone, value: "", nlb: true, want: unset},                                              // aws_loadbalancer.go:448-449
		{suffix: CrossZone, value: "True", want: "on", check: func(o *Options) bool { return o.CrossZone }}, // aws.go:2663: strconv.ParseBool
		{suffix: CrossZone, value: "1", want: "on", check: func(o *Options) bool { return o.CrossZone }},
		{suffix: CrossZone, value: " true", want: refused}, // ParseBool does not trim
		{suffix: ExtraTags, value: "", want: unset},        // aws_loadbalancer.go:122-128: empty map
		{suffix: ExtraTags, value: "k=v=x, team = a,=v,flag", want: "k=v, \"team \"=\" a\", flag", check: func(o *Options) bool { // aws_loadbalancer.go:122-146
			return reflect.DeepEqual(o.ExtraTags, map[string]string{"k": "v", "team ": " a", "flag": ""})
		}},
		{suffix: TGAttributes, value: "a=1=2, b = 2", nlb: true, want: "a=1, \"b \"=\" 2\"", check: func(o *Options) bool { // aws_loadbalancer.go:658
			return reflect.DeepEqual(o.TGAttributes, map[string]string{"a": "1", "b ": " 2"})
		}},
		{suffix: TGAttributes, value: "a", nlb: true, want: refused}, // aws_loadbalancer.go:675: "" is written, ELB refuses it
		{suffix: NodeLabels, value: "", want: unset},                 // aws_loadbalancer.go:1833-1835: every Node
		{suffix: NodeLabels, value: "role=", want: "role, any value", check: func(o *Options) bool { return o.NodeLabels.Selects(map[string]string{"role": "web"}) }}, // 1843
		{suffix: HCHealthy, value: "", want: refused},            // aws_loadbalancer.go:1541-1544: ParseInt("")
		{suffix: HCHealthy, value: "", nlb: true, want: refused}, // aws.go:2163-2166
		{suffix: HCHealthy, value: " 3", want: refused},          // ParseInt does not trim
		{suffix: HCHealthy, value: "3", want: "3", check: func(o *Options) bool { return o.HC.Healthy == 3 }},
		{suffix: HCUnhealthy, value: "", want: refused},
		{suffix: HCTimeout, value: "", want: refused},
		{suffix: HCInterval, value: "", want: refused},
		{suffix: HCInterval, value: "", nlb: true, want: refused},
		{suffix: HCProtocol, value: "", want: refused},                 // aws_loadbalancer.go:1580, 1600: target ":<port>", ELB refuses
		{suffix: HCProtocol, value: "", nlb: true, want: refused},      // aws.go:2199-2209: "Unsupported health check protocol"
		{suffix: HCProtocol, value: " http", nlb: true, want: refused}, // aws.go:2200: ToUpper, not trimmed
		{suffix: HCProtocol, value: "http", nlb: true, want: "HTTP", check: func(o *Options) bool { return o.HC.Protocol == "HTTP" }},
		{suffix: HCPort, value: "", want: refused},            // aws_loadbalancer.go:1583-1587: ParseInt("")
		{suffix: HCPort, value: "", nlb: true, want: refused}, // aws.go:2252-2255
		{suffix: HCPort, value: " 8080", want: refused},
		{suffix: HCPath, value: "", want: unset},            // aws_loadbalancer.go:1595: s != ""
		{suffix: ProxyProtocol, value: "", want: unset},     // aws.go:2568
		{suffix: ProxyProtocol, value: " *", want: refused}, // aws.go:2569-2570
		{suffix: IdleTimeout, value: "", want: unset},       // aws.go:2649
		{suffix: IdleTimeout, value: " 60", want: refused},  // aws.go:2650: ParseInt
		{suffix: IdleTimeout, value: "120", want: "120", check: func(o *Options) bool { return o.Attrs.IdleTimeout == 120 }},
		{suffix: Draining, value: "", want: unset}, // aws.go:2623
		{suffix: Draining, value: "True", want: "on", check: func(o *Options) bool { return o.Attrs.Draining }},
		{suffix: Draining, value: " true", want: refused},
		{suffix: DrainingTimeout, value: "", want: unset}, // aws.go:2636
		{suffix: DrainingTimeout, value: " 30", want: refused},
		{suffix: AccessLog, value: "", want: unset},            // aws.go:2598
		{suffix: AccessLog, value: "", nlb: true, want: unset}, // aws_loadbalancer.go:465
		{suffix: AccessLog, value: "1", with: bucket, want: "on", check: func(o *Options) bool { return o.Attrs.AccessLog }},
		{suffix: AccessLog, value: " true", with: bucket, want: refused},
		{suffix: AccessLogEmit, value: "", want: unset}, // aws.go:2585
		{suffix: AccessLogEmit, value: " 5", want: refused},
		{suffix: AccessLogBucket, value: "", want: unset},             // aws.go:2611
		{suffix: AccessLogPrefix, value: "", want: unset},             // aws.go:2617
		{suffix: TGAttributes, value: "", nlb: true, want: unset},     // aws_loadbalancer.go:658: empty map, nothing written
		{suffix: EIPAllocations, value: "", nlb: true, want: unset},   // see the report: upstream's Split gives [""], refused at creation only
		{suffix: PrivateAddresses, value: "", nlb: true, want: unset}, // likewise
	} {
		base := map[string]string{}
		if c.nlb {
			base[Prefix+Type] = "nlb"
		}
		for k, v := range c.with {
			base[k] = v
		}
		ann := map[string]string{Prefix + c.suffix: c.value}
		for k, v := range base {
			ann[k] = v
		}
		name := c.suffix + "=" + strings.ReplaceAll(c.value, " ", "␠")
		if c.nlb {
			name += " (nlb)"
		}
		got, err := Parse(svcWith(ann))
		switch c.want {
		case refused:
			if err == nil || !strings.Contains(err.Error(), Prefix+c.suffix) {
				t.Errorf("%s: %v; want refused naming the annotation, as upstream refuses it", name, err)
			}
		case unset:
			without, werr := Parse(svcWith(base))
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
		o, err := Parse(svcWith(map[string]string{SourceRanges: v}))
		if err != nil || !reflect.DeepEqual(o.SourceRanges, []string{"0.0.0.0/0"}) {
			t.Errorf("%s=%q: %v, %v; want every IPv4 client", SourceRanges, v, err, o)
		}
	}
}

// sslPorts lists the ports of svcWith that terminate TLS.
func sslPorts(o *Options) string {
	var out []string
	for _, p := range svcWith(nil).Spec.Ports {
		if o.SSLPort(p) {
			out = append(out, strconv.Itoa(int(p.Port)))
		}
	}
	return strings.Join(out, ",")
}
