package vsphere

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/config"
)

// "Strict for typos, not for upstream" (docs/writing-a-provider.md): every section and key that the
// upstream vSphere CCM reads in either form (its INI and YAML config structs for vCenters,
// nodes, NSX-T load balancers, NSX-T routes and NSX-T credentials), the key its manifests
// write that it ignores (service-account), and the in-tree provider's leftovers it tolerates
// are in upstreamKeys. Each is implemented, or accepted and reported once at start-up and by
// `ccm check-config`. Keys whose silent absence would weaken TLS verification or change
// where credentials come from are all implemented. A name in neither ccm's config nor this
// table stays an "unknown key" error with its line. The VSPHERE_* environment variables
// have their own table (env.go).

// upstreamKey is one row of the table: common/config's row plus the key's YAML name ("" if
// the YAML form has none). Example is INI syntax; Why is, for an implemented key, how ccm
// reads it if that needs saying.
type upstreamKey struct {
	config.UpstreamKey
	yamlKey string
}

const (
	secGlobal    = "Global"
	secVC        = "VirtualCenter"
	secLabels    = "Labels"
	secNodes     = "Nodes"
	secLB        = "LoadBalancer"
	secLBClass   = "LoadBalancerClass"
	secNSXT      = "NSXT"
	secRoute     = "Route"
	secNetwork   = "Network"
	secDisk      = "Disk"
	secWorkspace = "Workspace"
)

// yamlSectionOf is the YAML map of each INI section ("" for the in-tree sections, which have
// no YAML form).
var yamlSectionOf = map[string]string{secGlobal: "global", secVC: "vcenter", secLabels: "labels", secNodes: "nodes",
	secLB: "loadBalancer", secLBClass: "loadBalancerClass", secNSXT: "nsxt", secRoute: "route"}

func impl(section, key, yamlKey, example, note string) upstreamKey {
	return upstreamKey{config.UpstreamKey{Section: section, Key: key, Status: config.Implemented, Example: example, Why: note}, yamlKey}
}

func notUsed(section, key, yamlKey, example, why, instead string) upstreamKey {
	return upstreamKey{config.UpstreamKey{Section: section, Key: key, Status: config.Unused, Example: example, Why: why, Instead: instead}, yamlKey}
}

const (
	nsxLBWhy     = "ccm does not manage NSX-T load balancers: load balancer addresses come from [Pool] sections; NSX-T virtual servers the upstream CCM made stay and keep serving, but nobody updates their members when Nodes change or deletes them with their Service"
	nsxLBInstead = "before switching, move LoadBalancer Services to [Pool] addresses announced by kube-vip or MetalLB (docs/providers/vsphere.md, Migration), or keep the upstream CCM while NSX-T load balancers are in use"
	nsxtWhy      = "ccm does not talk to NSX-T (it manages neither NSX-T load balancers nor routes), so it needs no NSX-T manager or credentials"
	nsxtInstead  = "remove the [NSXT] section once nothing needs the upstream CCM's NSX-T load balancers or routes"
	inTreeWhy    = "a key of the in-tree vSphere provider (volumes, VM folders), which the upstream CCM ignores too"
	inTreeCSI    = "remove it; volumes are the vSphere CSI driver's business, with its own config"
	internalWhy  = "an internal field of the upstream config struct that its reader happens to accept; the upstream CCM sets it itself and ignores the file's value"
)

// upstreamKeys is every (section, key) the upstream vSphere CCM reads or tolerates. Written
// from its pkg/common/config (GlobalINI/YAML, VirtualCenterConfigINI/YAML, Labels), the CPI
// Nodes section, the NSX-T load balancer, route and NSX-T connection configs, the in-tree
// provider's VSphereConfig, the chart's configmap template and the manifests' vsphere.conf.
// docs/providers/vsphere.md carries it as a table (TestUpstreamKeysDocumented).
var upstreamKeys = []upstreamKey{
	impl(secGlobal, "user", "user", "someone", "inherited by [VirtualCenter] sections only when the file names no Secret or secrets directory, as upstream"),
	impl(secGlobal, "password", "password", `"other"`, "as user"),
	impl(secGlobal, "server", "server", "vc2.example.com", "one more vCenter, unless a [VirtualCenter] section already stands for that host: then [Global] only fills in that section's empty keys (upstream merges them the same way)"),
	impl(secGlobal, "port", "port", "8443", ""),
	impl(secGlobal, "insecure-flag", "insecureFlag", "true", "combined with each section's insecure-flag by OR, as upstream: a section's false does not turn verification back on (reported at start-up); with ca-file or thumbprint, those are ignored as upstream and reported at start-up"),
	impl(secGlobal, "datacenters", "datacenters", "DC9", ""),
	impl(secGlobal, "soap-roundtrip-count", "soapRoundtripCount", "3", ""),
	impl(secGlobal, "ca-file", "caFile", "testdata/upstream/ca.pem", "inherited by every section without its own; in YAML the chart's spelling ca-file is read too (the upstream CCM ignores that spelling and uses the system's CAs)"),
	impl(secGlobal, "thumbprint", "thumbprint", "AB:CD", "inherited by every section without its own, as upstream"),
	impl(secGlobal, "secret-name", "secretName", "creds", "with secret-namespace: the Secret of every vCenter without its own, tried when the file has no credentials for it or vCenter refuses them"),
	impl(secGlobal, "secret-namespace", "secretNamespace", "kube-system", ""),
	impl(secGlobal, "secrets-directory", "secretsDirectory", "testdata/upstream/secrets", "files named as a Secret's keys (<host>.username, <host>.password), read at each login; replaces the [Global] Secret. As upstream, /etc/cloud/secrets is used when it exists and nothing else is set, and a directory that does not exist is not used (reported at start-up)"),
	impl(secGlobal, "ip-family", "ipFamily", "ipv6", ""),
	notUsed(secGlobal, "api-disable", "apiDisable", "true",
		"ccm has no API server of its own (the upstream CCM serves node information over gRPC on api-binding unless api-disable)",
		"remove it, and the NodePort Service on port 43001 of the upstream manifests"),
	notUsed(secGlobal, "api-binding", "apiBinding", ":43002",
		"ccm has no API server of its own (the upstream CCM serves node information over gRPC there)",
		"remove it, and the NodePort Service on port 43001 of the upstream manifests; ccm serves only metrics and health on its --secure-port"),
	notUsed(secGlobal, "service-account", "", `"cloud-controller-manager"`,
		"the upstream manifests write it but no upstream code reads it (the CCM runs as its Pod's ServiceAccount)",
		"remove it; ccm too runs as its Pod's ServiceAccount (deploy/)"),
	notUsed(secGlobal, "datacenter", "", "DC0", inTreeWhy, "use datacenters"),
	notUsed(secGlobal, "datastore", "", "ds1", inTreeWhy, inTreeCSI),
	notUsed(secGlobal, "working-dir", "", "/DC0/vm/k8s", inTreeWhy, "remove it; ccm finds VMs by UUID in the configured datacenters"),
	notUsed(secGlobal, "vm-uuid", "", "4203c3b8-aaaa-bbbb-cccc-000000000000", inTreeWhy, "remove it; ccm finds each Node's VM by the Node's system UUID or providerID"),
	notUsed(secGlobal, "vm-name", "", "k8s-master", inTreeWhy, "remove it; ccm finds each Node's VM by the Node's system UUID or providerID"),
	notUsed(secGlobal, "secret-not-managed", "", "true", inTreeWhy, "remove it; ccm reads the credentials Secret every 10s"),

	impl(secVC, "server", "server", "10.0.0.9", "the vCenter's host when the section's name is another label (upstream's tenant ref)"),
	impl(secVC, "user", "user", "someone", ""),
	impl(secVC, "password", "password", `"other"`, ""),
	impl(secVC, "port", "port", "8443", ""),
	impl(secVC, "insecure-flag", "insecureFlag", "true", "OR [Global] insecure-flag, as upstream"),
	impl(secVC, "datacenters", "datacenters", "DC9", ""),
	impl(secVC, "soap-roundtrip-count", "soapRoundtripCount", "3", ""),
	impl(secVC, "ca-file", "caFile", "testdata/upstream/ca.pem", ""),
	impl(secVC, "thumbprint", "thumbprint", "AB:CD", ""),
	impl(secVC, "secret-name", "secretName", "creds", "with secret-namespace: this vCenter's Secret"),
	impl(secVC, "secret-namespace", "secretNamespace", "kube-system", ""),
	impl(secVC, "ip-family", "ipFamily", "ipv6", ""),
	notUsed(secVC, "tenantref", "tenantref", "t", internalWhy, "remove it; the section's name (YAML: the vcenter entry's name) is the tenant ref"),
	notUsed(secVC, "secretref", "secretref", "s", internalWhy, "remove it; use secret-name and secret-namespace"),
	notUsed(secVC, "ipfamilypriority", "", "ipv4", internalWhy, "remove it; use ip-family"),

	impl(secLabels, "region", "region", "k8s-region", "the tag category whose tag on the VM, its host, cluster or datacenter names the region"),
	impl(secLabels, "zone", "zone", "k8s-zone", ""),

	impl(secNodes, "internal-network-subnet-cidr", "internalNetworkSubnetCidr", "10.0.0.0/8", ""),
	impl(secNodes, "external-network-subnet-cidr", "externalNetworkSubnetCidr", "192.0.2.0/24", ""),
	impl(secNodes, "internal-vm-network-name", "internalVmNetworkName", "internal", ""),
	impl(secNodes, "external-vm-network-name", "externalVmNetworkName", "public", ""),
	impl(secNodes, "exclude-internal-network-subnet-cidr", "excludeInternalNetworkSubnetCidr", "10.9.0.0/16", ""),
	impl(secNodes, "exclude-external-network-subnet-cidr", "excludeExternalNetworkSubnetCidr", "10.9.0.0/16", ""),

	notUsed(secLB, "ip-pool-name", "ipPoolName", "pool-a-1", nsxLBWhy, nsxLBInstead),
	notUsed(secLB, "ip-pool-id", "ipPoolId", "pid", nsxLBWhy, nsxLBInstead),
	notUsed(secLB, "size", "size", "SMALL", nsxLBWhy, nsxLBInstead),
	notUsed(secLB, "lb-service-id", "lbServiceId", "lbs", nsxLBWhy, nsxLBInstead),
	notUsed(secLB, "tier1-gateway-path", "tier1GatewayPath", "/infra/tier-1s/t1", nsxLBWhy, nsxLBInstead),
	notUsed(secLB, "snat-disabled", "snatDisabled", "true", nsxLBWhy, nsxLBInstead),
	notUsed(secLB, "tags", "tags", `"{\"owner\":\"team\"}"`, nsxLBWhy, nsxLBInstead),
	notUsed(secLB, "tcp-app-profile-name", "tcpAppProfileName", "default-tcp-lb-app-profile", nsxLBWhy, nsxLBInstead),
	notUsed(secLB, "tcp-app-profile-path", "tcpAppProfilePath", "/infra/lb-app-profiles/tcp", nsxLBWhy, nsxLBInstead),
	notUsed(secLB, "udp-app-profile-name", "udpAppProfileName", "default-udp-lb-app-profile", nsxLBWhy, nsxLBInstead),
	notUsed(secLB, "udp-app-profile-path", "udpAppProfilePath", "/infra/lb-app-profiles/udp", nsxLBWhy, nsxLBInstead),

	notUsed(secLBClass, "ip-pool-name", "ipPoolName", "pool-a-1", nsxLBWhy, nsxLBInstead),
	notUsed(secLBClass, "ip-pool-id", "ipPoolId", "pid", nsxLBWhy, nsxLBInstead),
	notUsed(secLBClass, "tcp-app-profile-name", "tcpAppProfileName", "default-tcp-lb-app-profile", nsxLBWhy, nsxLBInstead),
	notUsed(secLBClass, "tcp-app-profile-path", "tcpAppProfilePath", "/infra/lb-app-profiles/tcp", nsxLBWhy, nsxLBInstead),
	notUsed(secLBClass, "udp-app-profile-name", "udpAppProfileName", "default-udp-lb-app-profile", nsxLBWhy, nsxLBInstead),
	notUsed(secLBClass, "udp-app-profile-path", "udpAppProfilePath", "/infra/lb-app-profiles/udp", nsxLBWhy, nsxLBInstead),

	notUsed(secNSXT, "user", "user", "admin", nsxtWhy, nsxtInstead),
	notUsed(secNSXT, "password", "password", `"x"`, nsxtWhy, nsxtInstead),
	notUsed(secNSXT, "host", "host", "nsx.example.com", nsxtWhy, nsxtInstead),
	notUsed(secNSXT, "insecure-flag", "insecureFlag", "true", nsxtWhy, nsxtInstead),
	notUsed(secNSXT, "remote-auth", "remoteAuth", "true", nsxtWhy, nsxtInstead),
	notUsed(secNSXT, "secret-name", "secretName", "nsx-creds", nsxtWhy, nsxtInstead),
	notUsed(secNSXT, "secret-namespace", "secretNamespace", "kube-system", nsxtWhy, nsxtInstead),
	notUsed(secNSXT, "vmc-access-token", "vmcAccessToken", `"t"`, nsxtWhy, nsxtInstead),
	notUsed(secNSXT, "vmc-auth-host", "vmcAuthHost", "console.cloud.vmware.com", nsxtWhy, nsxtInstead),
	notUsed(secNSXT, "client-auth-cert-file", "clientAuthCertFile", "/etc/nsx/client.crt", nsxtWhy, nsxtInstead),
	notUsed(secNSXT, "client-auth-key-file", "clientAuthKeyFile", "/etc/nsx/client.key", nsxtWhy, nsxtInstead),
	notUsed(secNSXT, "ca-file", "caFile", "/etc/nsx/ca.pem", nsxtWhy, nsxtInstead),

	notUsed(secRoute, "router-path", "routerPath", "/infra/tier-1s/t1",
		"ccm does not implement Routes: it neither adds nor removes NSX-T static routes for Pod CIDRs (existing ones stay)",
		"use a CNI that needs no cloud routes (an overlay or BGP), or keep the upstream CCM for routes"),

	notUsed(secNetwork, "public-network", "", "VM Network", inTreeWhy, "remove it; Node addresses follow [Nodes]"),
	notUsed(secDisk, "scsicontrollertype", "", "pvscsi", inTreeWhy, inTreeCSI),
	notUsed(secWorkspace, "server", "", "10.0.0.1", inTreeWhy, inTreeCSI),
	notUsed(secWorkspace, "datacenter", "", "DC0", inTreeWhy, inTreeCSI),
	notUsed(secWorkspace, "folder", "", "k8s", inTreeWhy, inTreeCSI),
	notUsed(secWorkspace, "default-datastore", "", "ds1", inTreeWhy, inTreeCSI),
	notUsed(secWorkspace, "resourcepool-path", "", "/DC0/host/c1/Resources", inTreeWhy, inTreeCSI),
}

// The fields below hold the keys the table marks unused. Pointers (and the multi-valued
// slice) tell "not in the file" from a zero value. Keys the upstream CCM parses have its
// types, so a value it could not parse is an error here too; the in-tree leftovers, which it
// never parses, are strings.

type upstreamGlobal struct {
	APIDisable       *bool   `gcfg:"api-disable"`
	APIBinding       *string `gcfg:"api-binding"`
	ServiceAccount   *string `gcfg:"service-account"`
	Datacenter       *string `gcfg:"datacenter"`
	Datastore        *string `gcfg:"datastore"`
	WorkingDir       *string `gcfg:"working-dir"`
	VMUUID           *string `gcfg:"vm-uuid"`
	VMName           *string `gcfg:"vm-name"`
	SecretNotManaged *string `gcfg:"secret-not-managed"`
}

type upstreamVC struct {
	TenantRef        *string
	SecretRef        *string
	IPFamilyPriority []string
}

type upstreamLBClass struct {
	IPPoolName        *string `gcfg:"ip-pool-name"`
	IPPoolID          *string `gcfg:"ip-pool-id"`
	TCPAppProfileName *string `gcfg:"tcp-app-profile-name"`
	TCPAppProfilePath *string `gcfg:"tcp-app-profile-path"`
	UDPAppProfileName *string `gcfg:"udp-app-profile-name"`
	UDPAppProfilePath *string `gcfg:"udp-app-profile-path"`
}

type upstreamLB struct {
	upstreamLBClass
	Size             *string `gcfg:"size"`
	LBServiceID      *string `gcfg:"lb-service-id"`
	Tier1GatewayPath *string `gcfg:"tier1-gateway-path"`
	SnatDisabled     *bool   `gcfg:"snat-disabled"`
	Tags             *string `gcfg:"tags"`
}

type upstreamNSXT struct {
	User               *string `gcfg:"user"`
	Password           *string `gcfg:"password"`
	Host               *string `gcfg:"host"`
	InsecureFlag       *bool   `gcfg:"insecure-flag"`
	RemoteAuth         *bool   `gcfg:"remote-auth"`
	SecretName         *string `gcfg:"secret-name"`
	SecretNamespace    *string `gcfg:"secret-namespace"`
	VMCAccessToken     *string `gcfg:"vmc-access-token"`
	VMCAuthHost        *string `gcfg:"vmc-auth-host"`
	ClientAuthCertFile *string `gcfg:"client-auth-cert-file"`
	ClientAuthKeyFile  *string `gcfg:"client-auth-key-file"`
	CAFile             *string `gcfg:"ca-file"`
}

type upstreamRoute struct {
	RouterPath *string `gcfg:"router-path"`
}

type upstreamNetwork struct {
	PublicNetwork *string `gcfg:"public-network"`
}

type upstreamDisk struct {
	SCSIControllerType *string
}

type upstreamWorkspace struct {
	Server           *string `gcfg:"server"`
	Datacenter       *string `gcfg:"datacenter"`
	Folder           *string `gcfg:"folder"`
	DefaultDatastore *string `gcfg:"default-datastore"`
	ResourcePoolPath *string `gcfg:"resourcepool-path"`
}

// logNotice is where the start-up reports go; tests replace it.
var logNotice = func(msg string) { klog.Warning(msg) }

// Notices returns the start-up reports of this config.
func (c *Config) Notices() []string { return append([]string(nil), c.notices...) }

// upstreamNotice is the text every report of an unused upstream key or variable carries.
const upstreamNotice = config.UpstreamNotice

// upstreamReport walks the table: each unused key present in the file gives one notice with
// its line, named as the file's form names it. Values are never repeated: some are secrets.
func (c *Config) upstreamReport() []string {
	v := reflect.ValueOf(c).Elem()
	type notice struct {
		line int
		text string
	}
	var found []notice
	for _, k := range upstreamKeys {
		if k.Status == config.Implemented {
			continue
		}
		for _, s := range config.SectionValues(v, k.Section) {
			f, ok := config.FieldByKey(s.Value, k.Key)
			if !ok {
				continue // TestUpstreamKeyTable catches a row without a field
			}
			if !present(f) {
				continue
			}
			p := config.Problem{Line: c.line(k.Section, s.Sub, k.Key), Section: k.Section, Subsection: s.Sub, Key: k.Key,
				Msg: upstreamNotice + k.Why + "; " + k.Instead}
			if c.yaml {
				p.Section, p.Subsection, p.Key = "", "", yamlPath(k, s.Sub)
			}
			found = append(found, notice{p.Line, p.String()})
		}
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].line < found[j].line })
	out := make([]string, len(found))
	for i, n := range found {
		out[i] = n.text
	}
	return out
}

// yamlPath names a key as the YAML form writes it, e.g. loadBalancerClass.public.ipPoolName.
func yamlPath(k upstreamKey, sub string) string {
	p := yamlSectionOf[k.Section]
	if sub != "" {
		p += "." + sub
	}
	return p + "." + k.yamlKey
}

// present tells whether the file set an upstream-only field. An empty string counts as not
// set: configs render `key = ""` for unset values.
func present(f reflect.Value) bool {
	switch f.Kind() {
	case reflect.Ptr:
		return !f.IsNil() && (f.Elem().Kind() != reflect.String || f.Elem().String() != "")
	case reflect.Slice:
		for i := 0; i < f.Len(); i++ {
			if f.Index(i).String() != "" {
				return true
			}
		}
	}
	return false
}

// upstreamKeysMarkdown is the table of docs/providers/vsphere.md, between its markers.
func upstreamKeysMarkdown() string {
	var b strings.Builder
	b.WriteString("| INI | YAML | ccm | Notes; what to do instead |\n|---|---|---|---|\n")
	for _, k := range upstreamKeys {
		sec := "[" + k.Section + "]"
		switch k.Section {
		case secVC:
			sec = `[VirtualCenter "name"]`
		case secLBClass:
			sec = `[LoadBalancerClass "name"]`
		}
		y := "—"
		if k.yamlKey != "" {
			sub := ""
			if k.Section == secVC || k.Section == secLBClass {
				sub = "<name>"
			}
			y = "`" + yamlPath(k, sub) + "`"
		}
		note := k.Why
		if k.Instead != "" {
			note += "; " + k.Instead
		}
		fmt.Fprintf(&b, "| `%s %s` | %s | %s | %s |\n", sec, k.Key, y, k.Status, strings.ReplaceAll(note, "|", `\|`))
	}
	return b.String()
}
