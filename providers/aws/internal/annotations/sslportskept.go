package annotations

// ssl-ports is read as upstream reads it (sslPortItems): "443, 8443" leaves 8443 plain and
// "443,*" leaves every port but 443 plain. An earlier ccm trimmed the items and read "*"
// anywhere as every port, so a Service it made may have a TLS listener that upstream's reading
// would turn plain: a silent downgrade of its clients' traffic. Compare, then write: when the
// listener on such a port is encrypted now, it is kept as it is (no write) and a Warning says
// how to write the value. A load balancer taken over from upstream never has this case: its
// listener on such a port is already plain.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// lenientSSLPort reports whether p would terminate TLS if ssl-ports' items were trimmed and a
// "*" anywhere in the list meant every port (an earlier ccm's reading).
func (o *Options) lenientSSLPort(p v1.ServicePort) bool {
	if o.SSLCert == "" {
		return false
	}
	for _, item := range o.SSLPorts {
		item = strings.TrimSpace(item)
		if item == "*" {
			return true
		}
		if n, err := strconv.Atoi(item); err == nil {
			if n == int(p.Port) {
				return true
			}
		} else if item != "" && item == p.Name {
			return true
		}
	}
	return false
}

// PortsReadPlainOnlyByUpstream are the ports upstream's reading of ssl-ports leaves plain and
// the lenient reading makes TLS. Empty for almost every Service: then nothing is read for this.
func (o *Options) PortsReadPlainOnlyByUpstream(svc *v1.Service) []v1.ServicePort {
	var out []v1.ServicePort
	for _, p := range svc.Spec.Ports {
		if p.Protocol == v1.ProtocolTCP && !o.SSLPort(p) && o.lenientSSLPort(p) {
			out = append(out, p)
		}
	}
	return out
}

// EncryptedProtocol reports whether a listener protocol (classic ELB or ELBv2) terminates TLS.
func EncryptedProtocol(proto string) bool {
	return slices.Contains([]string{"TLS", "SSL", "HTTPS"}, strings.ToUpper(proto))
}

// KeepTLSListeners marks in o the ports of svc whose current listener (current: protocol by
// load balancer port) is encrypted though ssl-ports, as upstream reads it, makes them plain;
// it returns the Warning to give ("" when none is kept).
func (o *Options) KeepTLSListeners(svc *v1.Service, current map[int32]string) string {
	var kept []string
	for _, p := range o.PortsReadPlainOnlyByUpstream(svc) {
		if proto, ok := current[p.Port]; ok && EncryptedProtocol(proto) {
			if o.KeptTLS == nil {
				o.KeptTLS = map[int32]bool{}
			}
			o.KeptTLS[p.Port] = true
			kept = append(kept, fmt.Sprintf("%s/%d", strings.ToUpper(current[p.Port]), p.Port))
		}
	}
	if len(kept) == 0 {
		return ""
	}
	return fmt.Sprintf("%s%s %q: listener %s kept encrypted, as it is: as upstream reads the value (items taken as written, \"*\" meaning every port only when alone) it would be plain; write the ports without spaces (443,8443), or \"*\" alone for every port",
		Prefix, SSLPorts, strings.Join(o.SSLPorts, ","), strings.Join(kept, ", "))
}
