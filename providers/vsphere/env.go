package vsphere

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/ccm-project/ccm/common/config"
)

// The VSPHERE_* environment variables the upstream vSphere CCM reads (its FromEnv and
// FromCPIEnv), applied as it applies them: after the file's vCenters are resolved. So the
// [Global]-like variables (user, password, port, datacenters, CA, thumbprint) change none of
// the file's vCenters; they only fill in the vCenters that VSPHERE_VCENTER_<id> defines. The
// Secret, secrets directory, [Labels] and [Nodes] variables override the file.

// envVar is one row of the environment table.
type envVar struct {
	name          string // <id> stands for the vCenter's identifier
	status        config.KeyStatus
	note, instead string
}

const envGlobalNote = "fills in the vCenters of VSPHERE_VCENTER_<id> only: the upstream CCM applies it after the file's vCenters are resolved, so it changes none of them"

var upstreamEnv = []envVar{
	{name: "VSPHERE_VCENTER", status: config.Unused,
		note:    "the upstream CCM sets [Global] server from it after the file's vCenters are resolved, so it adds and changes no vCenter",
		instead: "set [Global] server or a [VirtualCenter] section, or VSPHERE_VCENTER_<id>"},
	{name: "VSPHERE_VCENTER_PORT", status: config.Implemented, note: envGlobalNote},
	{name: "VSPHERE_USER", status: config.Implemented, note: envGlobalNote},
	{name: "VSPHERE_PASSWORD", status: config.Implemented, note: envGlobalNote},
	{name: "VSPHERE_DATACENTER", status: config.Implemented, note: envGlobalNote},
	{name: "VSPHERE_CAFILE", status: config.Implemented, note: envGlobalNote},
	{name: "VSPHERE_THUMBPRINT", status: config.Implemented, note: envGlobalNote},
	{name: "VSPHERE_INSECURE", status: config.Unused,
		note:    "it has no effect in the upstream CCM either: the file's vCenters are resolved before it is read, and a vCenter from VSPHERE_VCENTER_<id> is always verified",
		instead: "remove it; set insecure-flag in the file, or better ca-file or thumbprint"},
	{name: "VSPHERE_ROUNDTRIP_COUNT", status: config.Unused,
		note:    "it has no effect in the upstream CCM either (read after the file's vCenters are resolved; a vCenter from VSPHERE_VCENTER_<id> always gets 3)",
		instead: "set soap-roundtrip-count in the file"},
	{name: "VSPHERE_SECRET_NAME", status: config.Implemented, note: "overrides [Global] secret-name"},
	{name: "VSPHERE_SECRET_NAMESPACE", status: config.Implemented, note: "overrides [Global] secret-namespace"},
	{name: "VSPHERE_SECRETS_DIRECTORY", status: config.Implemented, note: "overrides [Global] secrets-directory"},
	{name: "VSPHERE_LABEL_REGION", status: config.Implemented, note: "overrides [Labels] region"},
	{name: "VSPHERE_LABEL_ZONE", status: config.Implemented, note: "overrides [Labels] zone"},
	{name: "VSPHERE_NODES_INTERNAL_NETWORK_SUBNET_CIDR", status: config.Implemented, note: "overrides [Nodes] internal-network-subnet-cidr"},
	{name: "VSPHERE_NODES_EXTERNAL_NETWORK_SUBNET_CIDR", status: config.Implemented, note: "overrides [Nodes] external-network-subnet-cidr"},
	{name: "VSPHERE_NODES_INTERNAL_VM_NETWORK_NAME", status: config.Implemented, note: "overrides [Nodes] internal-vm-network-name"},
	{name: "VSPHERE_NODES_EXTERNAL_VM_NETWORK_NAME", status: config.Implemented, note: "overrides [Nodes] external-vm-network-name"},
	{name: "VSPHERE_VCENTER_<id>", status: config.Implemented, note: "one more vCenter (the value is its host, or its name when VCENTER_<id>_SERVER is set); it replaces a [VirtualCenter] section of that name, as upstream. Its certificate is always verified. <id> PORT is VSPHERE_VCENTER_PORT, not a vCenter"},
	{name: "VCENTER_<id>_SERVER", status: config.Implemented, note: "the vCenter's host"},
	{name: "VCENTER_<id>_USERNAME", status: config.Implemented, note: "else VSPHERE_USER, else [Global] user"},
	{name: "VCENTER_<id>_PASSWORD", status: config.Implemented, note: "else VSPHERE_PASSWORD, else [Global] password"},
	{name: "VCENTER_<id>_PORT", status: config.Implemented, note: "else VSPHERE_VCENTER_PORT, else [Global] port"},
	{name: "VCENTER_<id>_DATACENTERS", status: config.Implemented, note: "else VSPHERE_DATACENTER, else [Global] datacenters"},
	{name: "VCENTER_<id>_CAFILE", status: config.Implemented, note: "else VSPHERE_CAFILE, else [Global] ca-file"},
	{name: "VCENTER_<id>_THUMBPRINT", status: config.Implemented, note: "else VSPHERE_THUMBPRINT, else [Global] thumbprint"},
	{name: "VCENTER_<id>_SECRET_NAME", status: config.Implemented, note: "with VCENTER_<id>_SECRET_NAMESPACE (both, or neither counts): this vCenter's Secret"},
	{name: "VCENTER_<id>_SECRET_NAMESPACE", status: config.Implemented, note: "as VCENTER_<id>_SECRET_NAME"},
	{name: "VCENTER_<id>_INSECURE", status: config.Unused,
		note:    "the upstream CCM reads it but never applies it (a vCenter from the environment is always verified)",
		instead: "remove it; set ca-file or thumbprint (VCENTER_<id>_CAFILE, VCENTER_<id>_THUMBPRINT)"},
	{name: "VCENTER_<id>_ROUNDTRIP", status: config.Unused,
		note: "the upstream CCM reads it but never applies it", instead: "remove it; [Global] soap-roundtrip-count applies"},
	{name: "VCENTER_<id>_IP_FAMILY", status: config.Unused,
		note: "the upstream CCM reads it but never applies it as written", instead: "remove it; [Global] ip-family applies"},
}

// environ is the process environment; tests replace it.
var environ = os.Environ

// defaultSecretsDirectory is used, as upstream, when it exists and neither the file nor
// VSPHERE_SECRETS_DIRECTORY names one.
var defaultSecretsDirectory = "/etc/cloud/secrets"

// applyEnv applies the VSPHERE_* variables (once) and returns the start-up reports and the
// problems they cause. Values are never repeated: some are passwords.
func (c *Config) applyEnv(environ []string) (notices []string, ps config.Problems) {
	if c.envDone {
		return nil, nil
	}
	c.envDone = true
	g := &c.Global
	c.globalSecretInFile = (g.SecretName != "" && g.SecretNamespace != "" && g.SecretsDirectory == "") ||
		(g.SecretName == "" && g.SecretNamespace == "" && g.SecretsDirectory != "")
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && v != "" {
			env[k] = v
		}
	}
	note := func(name, msg string) { notices = append(notices, "environment "+name+": "+msg) }
	for _, e := range upstreamEnv {
		if e.status == config.Unused && !strings.Contains(e.name, "<id>") && env[e.name] != "" {
			note(e.name, upstreamNotice+e.note+"; "+e.instead)
		}
	}
	// Overrides of the file.
	for name, dst := range map[string]*string{
		"VSPHERE_SECRET_NAME": &g.SecretName, "VSPHERE_SECRET_NAMESPACE": &g.SecretNamespace,
		"VSPHERE_SECRETS_DIRECTORY": &g.SecretsDirectory,
		"VSPHERE_LABEL_REGION":      &c.Labels.Region, "VSPHERE_LABEL_ZONE": &c.Labels.Zone,
		"VSPHERE_NODES_INTERNAL_NETWORK_SUBNET_CIDR": &c.Nodes.InternalNetworkSubnetCIDR,
		"VSPHERE_NODES_EXTERNAL_NETWORK_SUBNET_CIDR": &c.Nodes.ExternalNetworkSubnetCIDR,
		"VSPHERE_NODES_INTERNAL_VM_NETWORK_NAME":     &c.Nodes.InternalVMNetworkName,
		"VSPHERE_NODES_EXTERNAL_VM_NETWORK_NAME":     &c.Nodes.ExternalVMNetworkName,
	} {
		if v := env[name]; v != "" {
			*dst = v
		}
	}
	if g.SecretsDirectory == "" && defaultSecretsDirectory != "" {
		if st, err := os.Stat(defaultSecretsDirectory); err == nil && st.IsDir() {
			g.SecretsDirectory = defaultSecretsDirectory
			notices = append(notices, fmt.Sprintf("[Global] secrets-directory: %s exists, so vCenter credentials missing from the file (or refused) are read from its files instead of the [Global] Secret, as the upstream CCM does", defaultSecretsDirectory))
		}
	}
	// Upstream drops a secrets directory that does not exist, wherever it was set.
	if dir := g.SecretsDirectory; dir != "" {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			g.SecretsDirectory = ""
			notices = append(notices, config.Problem{Line: c.line("Global", "", "secrets-directory"), Section: "Global", Key: "secrets-directory",
				Msg: "is not a directory here, so it is not used (the upstream CCM ignores a missing one too): credentials must come from the file or a Secret"}.String())
		}
	}
	// The defaults of vCenters from the environment: [Global] as the file has it, overridden.
	d := struct{ user, password, port, datacenters, caFile, thumbprint string }{
		or(env["VSPHERE_USER"], g.User), or(env["VSPHERE_PASSWORD"], g.Password), or(env["VSPHERE_VCENTER_PORT"], g.Port),
		or(env["VSPHERE_DATACENTER"], g.Datacenters), or(env["VSPHERE_CAFILE"], g.CAFile), or(env["VSPHERE_THUMBPRINT"], g.Thumbprint)}
	var ids []string
	for _, k := range sortedKeys(env) {
		if id, ok := strings.CutPrefix(k, "VSPHERE_VCENTER_"); ok && id != "" && id != "PORT" {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		for _, name := range []string{"VSPHERE_USER", "VSPHERE_PASSWORD", "VSPHERE_VCENTER_PORT", "VSPHERE_DATACENTER", "VSPHERE_CAFILE", "VSPHERE_THUMBPRINT"} {
			if env[name] != "" {
				note(name, "has no effect: it "+envGlobalNote+", and no VSPHERE_VCENTER_<id> is set")
			}
		}
	}
	for _, id := range ids {
		get := func(suffix string) string { return env["VCENTER_"+id+"_"+suffix] }
		for _, suffix := range []string{"INSECURE", "ROUNDTRIP", "IP_FAMILY"} {
			if get(suffix) != "" {
				e := envRow("VCENTER_<id>_" + suffix)
				note("VCENTER_"+id+"_"+suffix, upstreamNotice+e.note+"; "+e.instead)
			}
		}
		name := env["VSPHERE_VCENTER_"+id]
		vc := &VirtualCenterConfig{env: id, Server: get("SERVER"), User: or(get("USERNAME"), d.user), Password: or(get("PASSWORD"), d.password),
			Port: or(get("PORT"), d.port), Datacenters: or(get("DATACENTERS"), d.datacenters), CAFile: or(get("CAFILE"), d.caFile),
			Thumbprint: or(get("THUMBPRINT"), d.thumbprint)}
		if get("SECRET_NAME") != "" && get("SECRET_NAMESPACE") != "" {
			vc.SecretName, vc.SecretNamespace = get("SECRET_NAME"), get("SECRET_NAMESPACE")
		}
		if n, err := strconv.Atoi(vc.Port); err != nil || n < 1 || n > 65535 {
			ps = append(ps, config.Problem{Msg: fmt.Sprintf("environment VCENTER_%s_PORT (or VSPHERE_VCENTER_PORT, or [Global] port): not a TCP port", id)})
		}
		if vc.CAFile != "" {
			if _, err := os.Stat(vc.CAFile); err != nil {
				ps = append(ps, config.Problem{Msg: fmt.Sprintf("environment VCENTER_%s_CAFILE (or VSPHERE_CAFILE, or [Global] ca-file): cannot read %s", id, vc.CAFile)})
			}
		}
		if c.VirtualCenter == nil {
			c.VirtualCenter = map[string]*VirtualCenterConfig{}
		}
		if old := c.VirtualCenter[name]; old != nil && old.env == "" {
			notices = append(notices, fmt.Sprintf("[VirtualCenter %q]: replaced by environment VSPHERE_VCENTER_%s, as the upstream CCM does (none of the section's keys apply)", name, id))
		}
		c.VirtualCenter[name] = vc
	}
	return notices, ps
}

func envRow(name string) envVar {
	for _, e := range upstreamEnv {
		if e.name == name {
			return e
		}
	}
	panic("vsphere: no row for environment variable " + name)
}

// upstreamEnvMarkdown is the environment table of docs/providers/vsphere.md.
func upstreamEnvMarkdown() string {
	var b strings.Builder
	b.WriteString("| Variable | ccm | Notes; what to do instead |\n|---|---|---|\n")
	for _, e := range upstreamEnv {
		note := e.note
		if e.instead != "" {
			note += "; " + e.instead
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", e.name, e.status, strings.ReplaceAll(note, "|", `\|`))
	}
	return b.String()
}
