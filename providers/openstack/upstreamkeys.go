package openstack

import (
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/config"
)

// "Strict for typos, not for upstream" (docs/writing-a-provider.md): every section and key that the
// upstream openstack-cloud-controller-manager reads (its config structs, the sections its
// chart always renders, in-tree leftovers it tolerates) is known here. upstreamKeys says, for
// each, whether ccm implements it, accepts it and reports it once ("read by the upstream CCM,
// not used by ccm"), or refuses it because ignoring it would weaken security or move traffic.
// A name in neither ccm's nor this table's set stays an "unknown key" error with its line.

// The table's rows are common/config's: config.UpstreamReport walks them over the config
// struct, config.UpstreamMarkdown writes the docs table.
type upstreamKey = config.UpstreamKey

const (
	secGlobal  = "Global"
	secLB      = "LoadBalancer"
	secLBClass = "LoadBalancerClass"
	secNet     = "Networking"
	secMeta    = "Metadata"
	secRoute   = "Route"
	secBS      = "BlockStorage"
	secKM      = "KeyManager"
)

func impl(section, key, example string) upstreamKey {
	return upstreamKey{Section: section, Key: key, Status: config.Implemented, Example: example}
}

// implWhy is an implemented key whose docs row says how ccm reads it.
func implWhy(section, key, example, how string) upstreamKey {
	return upstreamKey{Section: section, Key: key, Status: config.Implemented, Example: example, Why: how}
}

func notUsed(section, key, example, why, instead string) upstreamKey {
	return upstreamKey{Section: section, Key: key, Status: config.Unused, Example: example, Why: why, Instead: instead}
}

const blockStorageWhy = "volumes are the Cinder CSI driver's business (it reads [BlockStorage] from the same file); ccm has no volume code"
const blockStorageInstead = "nothing to do for ccm; keep it if the Cinder CSI driver reads this file"

// [KeyManager] is upstream's barbican-kms-plugin's (pkg/kms/barbican: KMSOpts), which reads the
// same cloud.conf as the CCM; the upstream CCM ignores the section.
const keyManagerWhy = "the Barbican key the barbican-kms-plugin encrypts Kubernetes Secrets with (it reads [KeyManager] from the same file); ccm has no KMS code"
const keyManagerInstead = "nothing to do for ccm; keep it if the barbican-kms-plugin reads this file"

// upstreamKeys is every (section, key) the upstream OpenStack CCM reads. Written from the
// upstream config structs (AuthOpts, LoadBalancerOpts, LBClass, NetworkingOpts, RouterOpts,
// metadata.Opts, the Cinder CSI BlockStorageOpts, the barbican-kms-plugin's KMSOpts and the
// in-tree provider's leftovers) and
// the chart's cloud.conf template; docs/providers/openstack.md carries it as a table
// (TestUpstreamKeysDocumented).
var upstreamKeys = []upstreamKey{
	impl(secGlobal, "auth-url", "https://other.example.com:5000/v3"),
	impl(secGlobal, "username", "someone"),
	impl(secGlobal, "user-id", "uid"),
	impl(secGlobal, "password", `"other"`),
	impl(secGlobal, "tenant-id", "pid"),
	impl(secGlobal, "tenant-name", "other"),
	impl(secGlobal, "domain-id", "did"),
	impl(secGlobal, "domain-name", "other"),
	impl(secGlobal, "tenant-domain-id", "tdid"),
	impl(secGlobal, "tenant-domain-name", "tdn"),
	impl(secGlobal, "user-domain-id", "udid"),
	impl(secGlobal, "user-domain-name", "udn"),
	impl(secGlobal, "region", "RegionTwo"),
	impl(secGlobal, "ca-file", "testdata/upstream/ca.pem"),
	implWhy(secGlobal, "tls-insecure", "true",
		"as upstream (a string it compares with true): only the exact value true turns TLS certificate verification off; any other value (True, 1, yes) keeps verification on and is reported with its line at start-up and by check-config. A clouds.yaml's verify is not read, as upstream's ReadClouds does not read it"),
	impl(secGlobal, "application-credential-id", "acid"),
	impl(secGlobal, "application-credential-name", "acn"),
	impl(secGlobal, "application-credential-secret", `"other"`),
	implWhy(secGlobal, "os-endpoint-type", "internal",
		"the catalog interface of every service (public, internal or admin; publicURL-style names too), as upstream"),
	implWhy(secGlobal, "cert-file", "testdata/upstream/client.crt", "the TLS client certificate presented to Keystone and every service, with key-file"),
	implWhy(secGlobal, "key-file", "testdata/upstream/client.key", "the key of cert-file"),
	implWhy(secGlobal, "token", "gAAAAAB-token", "an existing Keystone token instead of a password; it cannot be renewed, so ccm stops working when it expires, as upstream"),
	implWhy(secGlobal, "trust-id", "tid", "the token is scoped to this Keystone trust (OS-TRUST), as upstream"),
	implWhy(secGlobal, "trustee-id", "tuid", "the user that logs in for the trust (with trustee-password); else username/user-id and password"),
	implWhy(secGlobal, "trustee-password", `"x"`, "the password of trustee-id"),
	implWhy(secGlobal, "use-clouds", "true",
		"as upstream: the [Global] keys left empty are taken from a clouds.yaml entry (credentials, region, interface, cacert, cert, key)"),
	implWhy(secGlobal, "clouds-file", "testdata/upstream/clouds.yaml", "the clouds.yaml use-clouds reads (default: the OpenStack client's standard places)"),
	implWhy(secGlobal, "cloud", "other", "the clouds.yaml entry use-clouds reads (default: OS_CLOUD, else the file's only entry)"),
	notUsed(secGlobal, "secret-name", "cloud-config",
		"an in-tree provider leftover the upstream CCM tolerates", "remove it; ccm reads credentials from this file"),
	notUsed(secGlobal, "secret-namespace", "kube-system",
		"an in-tree provider leftover the upstream CCM tolerates", "remove it; ccm reads credentials from this file"),
	notUsed(secGlobal, "kubeconfig-path", "/etc/kubernetes/kubeconfig",
		"an in-tree provider leftover the upstream CCM tolerates", "remove it; ccm uses its --kubeconfig flag"),

	impl(secLB, "enabled", "false"),
	impl(secLB, "subnet-id", "sid"),
	impl(secLB, "member-subnet-id", "msid"),
	impl(secLB, "network-id", "nid"),
	impl(secLB, "floating-network-id", "fnid"),
	impl(secLB, "floating-subnet-id", "fsid"),
	impl(secLB, "lb-method", "LEAST_CONNECTIONS"),
	impl(secLB, "lb-provider", "ovn"),
	impl(secLB, "create-monitor", "true"),
	impl(secLB, "monitor-delay", "10s"),
	impl(secLB, "monitor-timeout", "2s"),
	impl(secLB, "monitor-max-retries", "3"),
	impl(secLB, "manage-security-groups", "true"),
	impl(secLB, "internal-lb", "true"),
	notUsed(secLB, "lb-version", "v2",
		"ccm speaks the Octavia v2 API only, which is what v2 selects", "remove it"),
	notUsed(secLB, "use-octavia", "true",
		"ccm always uses Octavia (Neutron LBaaS is gone)", "remove it"),
	implWhy(secLB, "floating-subnet", "public-*",
		"as upstream, when floating-subnet-id is unset: new floating IPs come from the first subnet of the floating network whose name matches (a glob, ~ for a regular expression, ! to negate) and that has a free address"),
	implWhy(secLB, "floating-subnet-tags", "public",
		"as upstream, when floating-subnet-id is unset: only subnets with these tags (comma-separated; any of them, & for all, ! to negate) give floating IPs, with floating-subnet if set"),
	implWhy(secLB, "monitor-max-retries-down", "3",
		"as upstream: the monitors' max_retries_down (default 3); the annotation loadbalancer.openstack.org/health-monitor-max-retries-down overrides it"),
	implWhy(secLB, "node-selector", "env=prod",
		"as upstream: only the Nodes with these labels (key=value, or key for any value; comma-separated) become members; the Service annotation loadbalancer.openstack.org/node-selector overrides it"),
	notUsed(secLB, "cascade-delete", "false",
		"ccm always deletes its load balancers with Octavia's cascade delete", "remove it"),
	implWhy(secLB, "flavor-id", "fid",
		"as upstream: the Octavia flavor load balancers are created with (flavor_id); the annotation loadbalancer.openstack.org/flavor-id overrides it. Octavia cannot change it later: a new value applies to new load balancers only. Not sent with lb-provider = ovn, as upstream; said once at start-up and by check-config with its line"),
	implWhy(secLB, "availability-zone", "az1",
		"as upstream: the Octavia availability zone load balancers are created in; the annotation loadbalancer.openstack.org/availability-zone overrides it. Octavia cannot change it later: a new value applies to new load balancers only. Not sent with lb-provider = ovn, as upstream; said once at start-up and by check-config with its line"),
	implWhy(secLB, "enable-ingress-hostname", "true",
		"as upstream: a proxy-protocol Service's status is the host name <address>.<ingress-hostname-suffix> instead of the address with ipMode Proxy"),
	implWhy(secLB, "ingress-hostname-suffix", "nip.io",
		"as upstream: the suffix of enable-ingress-hostname's host names (default nip.io)"),
	impl(secLB, "default-tls-container-ref", "https://barbican.example.com/v1/containers/x"),
	impl(secLB, "container-store", "external"),
	impl(secLB, "max-shared-lb", "3"),
	implWhy(secLB, "provider-requires-serial-api-calls", "true",
		"as upstream: load balancers are created bare and their listeners, pools, monitors and members are added one call at a time, for Octavia providers that accept a fully populated create and then leave its children pending. Without it ccm creates populated and, for a load balancer whose create Octavia refuses (400), creates that one bare"),

	impl(secLBClass, "floating-network-id", "fnid"),
	impl(secLBClass, "floating-subnet-id", "fsid"),
	impl(secLBClass, "network-id", "nid"),
	impl(secLBClass, "subnet-id", "sid"),
	impl(secLBClass, "member-subnet-id", "msid"),
	implWhy(secLBClass, "floating-subnet", "public-*",
		"as upstream: the class's floating IP subnet pattern (as in [LoadBalancer]); a class that sets floating-subnet-id, -subnet or -subnet-tags wins over the Service's annotations"),
	implWhy(secLBClass, "floating-subnet-tags", "public",
		"as upstream: the class's floating IP subnet tags (as in [LoadBalancer])"),

	impl(secNet, "ipv6-support-disabled", "true"),
	implWhy(secNet, "public-network-name", "public",
		"as upstream: Node addresses on a network of this name (repeat the key for several) are ExternalIP"),
	implWhy(secNet, "internal-network-name", "private",
		"as upstream: when set (repeat the key for several), addresses on other networks are not InternalIP; floating IPs stay ExternalIP"),
	implWhy(secNet, "address-sort-order", "10.0.0.0/8, fd00::/8",
		"as upstream: Node addresses in these CIDRs come first, by CIDR then by address; an item that is not a CIDR is ignored and reported"),

	notUsed(secMeta, "search-order", "configDrive,metadataService",
		"ccm looks servers up by providerID through the Nova API, never through the config drive or metadata service (a value upstream would not start with is an error here too)", "remove it"),
	implWhy(secMeta, "request-timeout", "10s",
		"as upstream: the timeout of every OpenStack API call, not only of metadata look-ups (unset or 0: 60s)"),

	implWhy(secRoute, "router-id", "rid",
		"as upstream: each Node's Pod CIDR is routed on this router through the Node's address and allowed on its port; ccm lists, changes and deletes only the routes it recorded as this cluster's or that go through one of this cluster's Nodes"),

	notUsed(secBS, "bs-version", "v3", blockStorageWhy, blockStorageInstead),
	notUsed(secBS, "trust-device-path", "false", blockStorageWhy, blockStorageInstead),
	notUsed(secBS, "ignore-volume-az", "true", blockStorageWhy, blockStorageInstead),
	notUsed(secBS, "node-volume-attach-limit", "128", blockStorageWhy, blockStorageInstead),
	notUsed(secBS, "rescan-on-resize", "true", blockStorageWhy, blockStorageInstead),
	notUsed(secBS, "ignore-volume-microversion", "true", blockStorageWhy, blockStorageInstead),

	notUsed(secKM, "key-id", "kid", keyManagerWhy, keyManagerInstead),
}

// The fields below hold the keys the table marks unused or unsupported. Pointers (and the
// multi-valued slices) tell "not in the file" from a zero value; gcfg allocates them. Their
// types are upstream's, so a value upstream could not parse is an error here too.

type upstreamGlobal struct {
	SecretName      *string `gcfg:"secret-name"`
	SecretNamespace *string `gcfg:"secret-namespace"`
	KubeconfigPath  *string `gcfg:"kubeconfig-path"`
}

type upstreamLB struct {
	LBVersion                      *string `gcfg:"lb-version"`
	UseOctavia                     *bool   `gcfg:"use-octavia"`
	MonitorMaxRetriesDown          *uint   `gcfg:"monitor-max-retries-down"`
	CascadeDelete                  *bool   `gcfg:"cascade-delete"`
	FlavorID                       *string `gcfg:"flavor-id"`
	AvailabilityZone               *string `gcfg:"availability-zone"`
	EnableIngressHostname          *bool   `gcfg:"enable-ingress-hostname"`
	IngressHostnameSuffix          *string `gcfg:"ingress-hostname-suffix"`
	DefaultTLSContainerRef         *string `gcfg:"default-tls-container-ref"`
	ContainerStore                 *string `gcfg:"container-store"`
	MaxSharedLB                    *int    `gcfg:"max-shared-lb"`
	ProviderRequiresSerialAPICalls *bool   `gcfg:"provider-requires-serial-api-calls"`
}

// upstreamNetworking holds [Networking] keys of upstream's that ccm implements
// (nodeaddresses.go); multi-valued as upstream's.
type upstreamNetworking struct {
	PublicNetworkName   []string `gcfg:"public-network-name"`
	InternalNetworkName []string `gcfg:"internal-network-name"`
	AddressSortOrder    string   `gcfg:"address-sort-order"`
}

type upstreamMetadata struct {
	SearchOrder    *string          `gcfg:"search-order"`
	RequestTimeout *config.Duration `gcfg:"request-timeout"`
}

type upstreamRoute struct {
	RouterID *string `gcfg:"router-id"`
}

type upstreamBlockStorage struct {
	BSVersion                *string `gcfg:"bs-version"`
	TrustDevicePath          *bool   `gcfg:"trust-device-path"`
	IgnoreVolumeAZ           *bool   `gcfg:"ignore-volume-az"`
	NodeVolumeAttachLimit    *int64  `gcfg:"node-volume-attach-limit"`
	RescanOnResize           *bool   `gcfg:"rescan-on-resize"`
	IgnoreVolumeMicroversion *bool   `gcfg:"ignore-volume-microversion"`
}

type upstreamKeyManager struct {
	KeyID *string `gcfg:"key-id"`
}

// logNotice is where the start-up report goes; tests replace it.
var logNotice = func(msg string) { klog.Warning(msg) }

// Notices returns the "read by the upstream CCM, not used by ccm" lines for this config.
func (c *Config) Notices() []string { return append([]string(nil), c.notices...) }

// upstreamReport: each unused key present in the file gives one notice, each unsupported key
// present with a value that is not harmless one problem (the reader adds its line).
func (c *Config) upstreamReport() (notices []string, ps config.Problems) {
	notices, ps = config.UpstreamReport(c, upstreamKeys)
	return append(notices, c.networkingNotices()...), append(ps, c.metadataProblems()...)
}

// upstreamKeysMarkdown is the table of docs/providers/openstack.md, between its markers.
func upstreamKeysMarkdown() string {
	return config.UpstreamMarkdown(upstreamKeys, func(section string) string {
		if section == secLBClass {
			return `[LoadBalancerClass "name"]`
		}
		return "[" + section + "]"
	})
}
