package helm

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/yaml"
)

// upstreamValue is one value of an upstream chart (its values.yaml and the values its templates
// read), with a value of its shape, and whether ccm's chart uses it or reports it unused.
type upstreamValue struct {
	path, value string // value in YAML
	unused      bool
}

// Every value of the upstream charts read (docs/helm.md names the versions).
var upstreamValues = map[string][]upstreamValue{
	"openstack": {
		{path: "commonAnnotations", value: "{example.com/a: b}"},
		{path: "imagePullSecrets", value: "[pull-secret-1]"},
		{path: "image.repository", value: "registry.k8s.io/provider-os/openstack-cloud-controller-manager", unused: true},
		{path: "image.tag", value: "v1.31.0", unused: true},
		{path: "extraInitContainers", value: "[{name: wait, image: busybox, command: [sleep, '1']}]"},
		{path: "extraEnv", value: "[{name: OS_CCM_REGIONAL, value: 'true'}]"},
		{path: "resources", value: "{requests: {cpu: 200m}}"},
		{path: "livenessProbe", value: "{httpGet: {path: /healthz, port: 10258, scheme: HTTPS}}"},
		{path: "readinessProbe", value: "{httpGet: {path: /healthz, port: 10258, scheme: HTTPS}}"},
		{path: "dnsPolicy", value: "Default"},
		{path: "nodeSelector", value: "{node-role.kubernetes.io/control-plane: ''}"},
		{path: "tolerations", value: "[{key: node.cloudprovider.kubernetes.io/uninitialized, value: 'true', effect: NoSchedule}]"},
		{path: "podAnnotations", value: "{example.com/p: q}"},
		{path: "podLabels", value: "{team: platform}"},
		{path: "podSecurityContext", value: "{runAsUser: 1001}"},
		{path: "securityContext", value: "{capabilities: {drop: [ALL]}}"},
		{path: "enabledControllers", value: "[cloud-node, service]"},
		{path: "controllerExtraArgs", value: "'- --concurrent-service-syncs=3'"},
		{path: "serviceMonitor.enabled", value: "true"},
		{path: "serviceMonitor.additionalLabels", value: "{release: prometheus}"},
		{path: "secret.enabled", value: "true"},
		{path: "secret.create", value: "true"},
		{path: "secret.name", value: "cloud-config"},
		{path: "logVerbosityLevel", value: "3"},
		{path: "cloudConfig.global", value: "{auth-url: 'https://keystone.example.com:5000/v3', username: u, password: p, tenant-name: t}"},
		{path: "cloudConfig.networking", value: "{ipv6-support-disabled: true}"},
		{path: "cloudConfig.loadBalancer", value: "{floating-network-id: f}"},
		{path: "cloudConfig.blockStorage", value: "{bs-version: v3}"},
		{path: "cloudConfig.metadata", value: "{search-order: configDrive}"},
		{path: "cloudConfig.route", value: "{router-id: r}"},
		{path: "hostAliases", value: "[{ip: 10.0.0.1, hostnames: [keystone.example.com]}]"},
		{path: "priorityClassName", value: "system-cluster-critical"},
		{path: "extraVolumes", value: "[{name: k8s-certs, hostPath: {path: /etc/kubernetes/pki}}]"},
		{path: "extraVolumeMounts", value: "[{name: k8s-certs, mountPath: /etc/kubernetes/pki, readOnly: true}]"},
		{path: "cluster.name", value: "prod-eu-1"},
		{path: "clusterRoleName", value: "system:cloud-controller-manager"},
		{path: "serviceAccountName", value: "cloud-controller-manager"},
		{path: "nameOverride", value: "occm"},
	},
	"aws": {
		{path: "namespace", value: "kube-system"},
		{path: "args", value: "[--v=2, --cloud-provider=aws, --cluster-name=prod-eu-1]"},
		{path: "image.repository", value: "registry.k8s.io/provider-aws/cloud-controller-manager", unused: true},
		{path: "image.tag", value: "v1.35.0", unused: true},
		{path: "imagePullSecrets", value: "[{name: regcred}]"},
		{path: "nameOverride", value: "aws-ccm"},
		{path: "nodeSelector", value: "{node-role.kubernetes.io/control-plane: ''}"},
		{path: "clusterRoleRules", value: "[{apiGroups: [''], resources: [nodes], verbs: ['*']}]", unused: true},
		{path: "resources", value: "{requests: {cpu: 200m}}"},
		{path: "env", value: "[{name: AWS_REGION, value: eu-west-1}]"},
		{path: "securityContext", value: "{capabilities: {drop: [ALL]}}"},
		{path: "podSecurityContext", value: "{runAsUser: 1001}"},
		{path: "podAnnotations", value: "{example.com/p: q}"},
		{path: "tolerations", value: "[{key: node-role.kubernetes.io/master, effect: NoSchedule}]"},
		{path: "dnsPolicy", value: "Default"},
		{path: "clusterRoleName", value: "system:cloud-controller-manager"},
		{path: "roleBindingName", value: "cloud-controller-manager:apiserver-authentication-reader"},
		{path: "serviceAccountName", value: "cloud-controller-manager"},
		{path: "serviceAccount.annotations", value: "{eks.amazonaws.com/role-arn: 'arn:aws:iam::111122223333:role/ccm'}"},
		{path: "roleName", value: "extension-apiserver-authentication-reader"},
		{path: "extraVolumes", value: "[{name: x, emptyDir: {}}]"},
		{path: "extraVolumeMounts", value: "[{name: x, mountPath: /x}]"},
		{path: "hostNetworking", value: "true"},
	},
	"vsphere": {
		{path: "config.enabled", value: "true"},
		{path: "config.name", value: "vsphere-cloud-config"},
		{path: "config.vcenter", value: "vcenter.example.com"},
		{path: "config.username", value: "administrator@vsphere.local"},
		{path: "config.password", value: "secret"},
		{path: "config.datacenter", value: "DC0"},
		{path: "config.region", value: "k8s-region"},
		{path: "config.zone", value: "k8s-zone"},
		{path: "config.thumbprint", value: "'AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01'"},
		{path: "config.caFile", value: "''"},
		{path: "config.nodes.internalNetworkSubnetCidr", value: "10.0.0.0/16"},
		{path: "config.nodes.externalNetworkSubnetCidr", value: "192.0.2.0/24"},
		{path: "config.nodes.internalVmNetworkName", value: "internal"},
		{path: "config.nodes.externalVmNetworkName", value: "external"},
		{path: "config.nodes.excludeInternalNetworkSubnetCidr", value: "10.0.99.0/24"},
		{path: "config.nodes.excludeExternalNetworkSubnetCidr", value: "192.0.2.128/25"},
		{path: "config.secret.create", value: "true"},
		{path: "config.secret.name", value: "vsphere-cloud-secret"},
		{path: "podSecurityPolicy.enabled", value: "true", unused: true},
		{path: "podSecurityPolicy.annotations", value: "{a: b}", unused: true},
		{path: "securityContext.enabled", value: "true"},
		{path: "securityContext.runAsUser", value: "1001"},
		{path: "securityContext.fsGroup", value: "1001"},
		{path: "rbac.create", value: "true"},
		{path: "serviceAccount.create", value: "true"},
		{path: "serviceAccount.name", value: "cloud-controller-manager"},
		{path: "daemonset.annotations", value: "{a: b}"},
		{path: "daemonset.image", value: "registry.k8s.io/cloud-pv-vsphere/cloud-provider-vsphere", unused: true},
		{path: "daemonset.tag", value: "v1.36.0", unused: true},
		{path: "daemonset.pullPolicy", value: "IfNotPresent"},
		{path: "daemonset.dnsPolicy", value: "ClusterFirst"},
		{path: "daemonset.cmdline.logging", value: "2"},
		{path: "daemonset.cmdline.cloudConfig.dir", value: "/etc/cloud"},
		{path: "daemonset.cmdline.cloudConfig.file", value: "vsphere.conf"},
		{path: "daemonset.cmdline.additionalParams", value: "{cluster-name: prod-eu-1}"},
		{path: "daemonset.replicaCount", value: "1", unused: true},
		{path: "daemonset.resources", value: "{requests: {cpu: 256m}}"},
		{path: "daemonset.podAnnotations", value: "{a: b}"},
		{path: "daemonset.podLabels", value: "{team: platform}"},
		{path: "daemonset.nodeSelector", value: "{node-role.kubernetes.io/control-plane: ''}"},
		{path: "daemonset.tolerations", value: "[{key: CriticalAddonsOnly, effect: NoExecute, operator: Exists}]"},
		{path: "daemonset.affinity", value: "{}"},
		{path: "daemonset.extraVolumes", value: "[{name: x, emptyDir: {}}]"},
		{path: "daemonset.extraVolumeMounts", value: "[{name: x, mountPath: /x}]"},
		{path: "daemonset.extraVolumesMounts", value: "[]", unused: true},
		{path: "daemonset.hostAliases", value: "[{ip: 10.0.0.5, hostnames: [vcenter.example.com]}]"},
		{path: "daemonset.fullnameOverride", value: "cpi", unused: true},
		{path: "nameOverride", value: "cpi"},
		{path: "fullnameOverride", value: "cpi", unused: true},
		{path: "global.config", value: "{region: k8s-region}"},
		{path: "service.endpointPort", value: "43001", unused: true},
	},
}

// Every value of the upstream chart is accepted: one values file setting all of them renders,
// passes the server-side dry-run, and the notes list exactly the unused ones, none as unknown.
func TestEveryUpstreamValueAccepted(t *testing.T) {
	for chart, vals := range upstreamValues {
		t.Run(chart, func(t *testing.T) {
			values := map[string]any{}
			for _, v := range vals {
				var val any
				if err := yaml.NewYAMLOrJSONDecoder(strings.NewReader(v.value), 64).Decode(&val); err != nil {
					t.Fatalf("%s: %v", v.path, err)
				}
				m := values
				parts := strings.Split(v.path, ".")
				for _, p := range parts[:len(parts)-1] {
					if _, ok := m[p].(map[string]any); !ok {
						m[p] = map[string]any{}
					}
					m = m[p].(map[string]any)
				}
				m[parts[len(parts)-1]] = val
			}
			b, _ := json.Marshal(values)
			f := filepath.Join(t.TempDir(), "values.yaml")
			os.WriteFile(f, b, 0o644)
			n := notes(t, chart, "-f", f)
			for _, v := range vals {
				// Reported as the value or a value holding it ("image" for image.tag).
				listed := false
				parts := strings.Split(v.path, ".")
				for i := range parts {
					listed = listed || strings.Contains(n, "  - "+strings.Join(parts[:i+1], ".")+"\n")
				}
				if listed != v.unused {
					t.Errorf("%s: listed as unused %v, want %v", v.path, listed, v.unused)
				}
			}
			if strings.Contains(n, "neither the upstream chart nor ccm knows") {
				t.Errorf("an upstream value is reported as unknown:\n%s", n)
			}
			out, err := runHelm("template", "rel", filepath.Join(root, "deploy", "charts", chart), "--namespace", "kube-system", "-f", f)
			if err != nil {
				t.Fatal(err)
			}
			manifest := filepath.Join(t.TempDir(), "manifest.yaml")
			os.WriteFile(manifest, []byte(out), 0o644)
			if _, err := env.Kubectl(context.Background(), "apply", "--dry-run=server", "--validate=strict", "-f", manifest); err != nil {
				t.Errorf("server-side dry-run: %v", err)
			}
		})
	}
}
