{{/*
Shared by every ccm chart (every chart holds the same file, and test/helm checks that they stay equal).
Each chart's _settings.tpl turns its values (the upstream chart's names, plus ours under `ccm:`)
into one settings object; these templates render the objects of deploy/base from it, so every
chart ships the same ServiceAccount, RBAC, config Secret and DaemonSet as the kustomize overlays.
*/}}

{{/* ccm.s: the settings object, computed once per template file. */}}
{{- define "ccm.s" -}}
{{- include "ccm.settings" . -}}
{{- end -}}

{{/* ccm.labels: labels of every object (the DaemonSet's selector labels come on top). */}}
{{- define "ccm.labels" -}}
app.kubernetes.io/part-of: ccm
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" | trunc 63 }}
{{- with merge (dict) (.extraLabels | default dict) (.s.labels | default dict) }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* ccm.meta: name, namespace (when namespaced), labels and the common annotations. */}}
{{- define "ccm.meta" -}}
name: {{ .name }}
{{- if .namespace }}
namespace: {{ .namespace }}
{{- end }}
labels:
  {{- include "ccm.labels" . | nindent 2 }}
{{- with merge (dict) (.extraAnnotations | default dict) (.s.annotations | default dict) }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* ccm.iniValue: one value as gcfg reads it: quoted, with \ and " escaped. */}}
{{- define "ccm.iniValue" -}}
{{- $s := toString . -}}
{{- /* YAML numbers arrive as float64: 128 must stay "128", not "1.28e+02". */ -}}
{{- if and (kindIs "float64" .) (eq (. | int64 | float64) .) }}{{ $s = . | int64 | toString }}{{ end -}}
"{{ $s | replace "\\" "\\\\" | replace "\"" "\\\"" | replace "\n" "\\n" }}"
{{- end -}}

{{/* ccm.iniSection: [Name "sub"] and its keys, sorted; list values become repeated keys. */}}
{{- define "ccm.iniSection" -}}
[{{ .name }}{{ with .sub }} "{{ . }}"{{ end }}]
{{- range $k, $v := .keys }}
{{- if kindIs "slice" $v }}
{{- range $v }}
{{ $k }} = {{ include "ccm.iniValue" . }}
{{- end }}
{{- else if not (kindIs "invalid" $v) }}
{{ $k }} = {{ include "ccm.iniValue" $v }}
{{- end }}
{{- end }}
{{- end -}}

{{/* ccm.has: "true" when the dotted path .path is set (not null) in the map .in. */}}
{{- define "ccm.has" -}}
{{- $cur := .in -}}
{{- $ok := true -}}
{{- range (splitList "." .path) -}}
{{- if and $ok (kindIs "map" $cur) (hasKey $cur .) -}}
{{- $cur = index $cur . -}}
{{- else -}}
{{- $ok = false -}}
{{- end -}}
{{- end -}}
{{- if and $ok (not (kindIs "invalid" $cur)) }}true{{ end -}}
{{- end -}}

{{/*
ccm.report: the values the operator set that ccm does not use (.unused, dotted paths), and the
top-level names neither the upstream chart nor ccm knows (.known), for NOTES.txt.
*/}}
{{- define "ccm.report" -}}
{{- $unused := list -}}
{{- range .unused -}}
{{- if include "ccm.has" (dict "in" $.values "path" .) -}}
{{- $unused = append $unused . -}}
{{- end -}}
{{- end -}}
{{- $unknown := list -}}
{{- range $k, $_ := .values -}}
{{- if not (has $k $.known) -}}
{{- $unknown = append $unknown $k -}}
{{- end -}}
{{- end -}}
{{- toYaml (dict "unused" $unused "unknown" $unknown) -}}
{{- end -}}

{{/* ccm.pullSecrets: upstream charts take names or {name: ...} objects; the API wants objects. */}}
{{- define "ccm.pullSecrets" -}}
{{- $out := list -}}
{{- range . -}}
{{- if kindIs "string" . }}{{ $out = append $out (dict "name" .) }}{{ else }}{{ $out = append $out . }}{{ end -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/*
ccm.args: the container's arguments as deploy/base sets them, from .provider, .config (the
--cloud-config path, if any), .cluster, .allowDefault, .listenAll (bind 0.0.0.0: metrics scraped
from outside, or no host network), .v, .controllers (list) and .extra (the operator's flags).
The chart decides --cloud-provider, --cloud-config and --cluster-name (the same flags in .extra
are dropped); for every other flag of ours, the operator's in .extra wins and ours is left out.
*/}}
{{- define "ccm.args" -}}
{{- $forced := list (printf "--cloud-provider=%s" .provider) -}}
{{- with .config }}{{ $forced = append $forced (printf "--cloud-config=%s" .) }}{{ end -}}
{{- with .cluster }}{{ $forced = append $forced (printf "--cluster-name=%s" .) }}{{ end -}}
{{- if .allowDefault }}{{ $forced = append $forced "--allow-default-cluster-name" }}{{ end -}}
{{- $v := 2 -}}
{{- if not (kindIs "invalid" .v) }}{{ $v = .v }}{{ end -}}
{{- $defaults := list "--leader-elect=true" "--use-service-account-credentials=false"
      (printf "--bind-address=%s" (ternary "0.0.0.0" "127.0.0.1" (.listenAll | default false)))
      "--secure-port=10258" (printf "--v=%d" ($v | int)) -}}
{{- with .controllers }}{{ $defaults = append $defaults (printf "--controllers=%s" (include "ccm.controllers" .)) }}{{ end -}}
{{- $flag := "^--([^=]+)" -}}
{{- $forcedNames := list -}}
{{- range $forced }}{{ $forcedNames = append $forcedNames (regexFind $flag .) }}{{ end -}}
{{- $extra := list -}}
{{- $extraNames := list -}}
{{- range .extra -}}
{{- $n := regexFind $flag (toString .) -}}
{{- $arg := toString . -}}
{{- if hasPrefix "--controllers=" $arg }}{{ $arg = printf "--controllers=%s" (include "ccm.controllers" (splitList "," (trimPrefix "--controllers=" $arg))) }}{{ end -}}
{{- if not (has $n $forcedNames) }}{{ $extra = append $extra $arg }}{{ $extraNames = append $extraNames $n }}{{ end -}}
{{- end -}}
{{- $a := $forced -}}
{{- range $defaults -}}
{{- if not (has (regexFind $flag .) $extraNames) }}{{ $a = append $a . }}{{ end -}}
{{- end -}}
{{- toYaml (concat $a $extra) -}}
{{- end -}}

{{/*
ccm.controllers: a --controllers list, comma-joined. Upstream charts use the library's short
aliases (cloud-node, cloud-node-lifecycle, service, route); ccm takes them too, but the chart
writes the controllers' full names, as `ccm --help` lists them.
*/}}
{{- define "ccm.controllers" -}}
{{- $alias := dict "cloud-node" "cloud-node-controller" "cloud-node-lifecycle" "cloud-node-lifecycle-controller" "service" "service-lb-controller" "route" "node-route-controller" -}}
{{- $names := list -}}
{{- range . -}}
{{- $n := toString . -}}
{{- $neg := ternary "-" "" (hasPrefix "-" $n) -}}
{{- $n = trimPrefix "-" $n -}}
{{- $names = append $names (printf "%s%s" $neg (get $alias $n | default $n)) -}}
{{- end -}}
{{- join "," $names -}}
{{- end -}}

{{/* ccm.flag: the value of the last --.name=VALUE in .args ("" if none). */}}
{{- define "ccm.flag" -}}
{{- $out := "" -}}
{{- $prefix := printf "--%s=" .name -}}
{{- range .args -}}
{{- if hasPrefix $prefix (toString .) }}{{ $out = trimPrefix $prefix (toString .) }}{{ end -}}
{{- end -}}
{{- $out -}}
{{- end -}}

{{/* ccm.hasFlag: "true" if .args hold --.name or --.name=... */}}
{{- define "ccm.hasFlag" -}}
{{- $found := false -}}
{{- range .args -}}
{{- $s := toString . -}}
{{- if or (eq $s (printf "--%s" $.name)) (hasPrefix (printf "--%s=" $.name) $s) }}{{ $found = true }}{{ end -}}
{{- end -}}
{{- if $found }}true{{ end -}}
{{- end -}}

{{/*
ccm.probes: /healthz on the secure port, as deploy/base. With the host network the kubelet
reaches it on 127.0.0.1; without, on the pod's address.
*/}}
{{- define "ccm.probes" -}}
{{- $get := dict "path" "/healthz" "port" 10258 "scheme" "HTTPS" -}}
{{- if .hostNetwork }}{{ $_ := set $get "host" "127.0.0.1" }}{{ end -}}
liveness:
  httpGet: {{ toJson $get }}
  initialDelaySeconds: 15
  periodSeconds: 10
  failureThreshold: 3
readiness:
  httpGet: {{ toJson $get }}
  periodSeconds: 10
{{- end -}}

{{/* ccm.image: ccm's image for this chart's provider (never the upstream CCM's image). */}}
{{- define "ccm.image" -}}
{{- $i := .Values.ccm.image -}}
{{- if $i.digest }}{{ printf "%s@%s" $i.repository $i.digest }}{{ else }}{{ printf "%s:%s" $i.repository ($i.tag | default .Chart.AppVersion) }}{{ end -}}
{{- end -}}

{{/*
ccm.recordingRules: per provider, recording rules that give the upstream CCM's metric names
from ccm's series, for dashboards and alerts written against upstream. Only exact mappings: the
same events, under upstream's label names and values. The rest (docs/helm.md says which and
why) would give an upstream name a different meaning, so they are left out rather than
approximated. The series keep their scrape labels (job, instance, pod): each ccm replica's
series stays apart, as upstream's did.
*/}}
{{- define "ccm.recordingRules" -}}
openstack:
  # Upstream names a reconcile <resource>_<call> (loadbalancer_ensure, _update, _delete): ccm's
  # kind and operation joined. An error is a reconcile that returned one, as upstream counts it.
  - record: cloudprovider_openstack_reconcile_total
    expr: 'sum without (provider, kind, result) (label_join(ccm_reconcile_total{provider="openstack"}, "operation", "_", "kind", "operation"))'
  - record: cloudprovider_openstack_reconcile_errors_total
    expr: 'sum without (provider, kind, result) (label_join(ccm_reconcile_total{provider="openstack",result="error"}, "operation", "_", "kind", "operation"))'
  # The histogram's count and sum only: ccm's buckets have other bounds than upstream's, so
  # _bucket cannot be rebuilt (histogram_quantile over the upstream name finds nothing).
  - record: cloudprovider_openstack_reconcile_duration_seconds_count
    expr: 'sum without (provider, kind) (label_join(ccm_reconcile_duration_seconds_count{provider="openstack"}, "operation", "_", "kind", "operation"))'
  - record: cloudprovider_openstack_reconcile_duration_seconds_sum
    expr: 'sum without (provider, kind) (label_join(ccm_reconcile_duration_seconds_sum{provider="openstack"}, "operation", "_", "kind", "operation"))'
{{- end -}}

{{/* ccm.serviceAccountCredentials: "true" when .args turn --use-service-account-credentials on (the last one counts). */}}
{{- define "ccm.serviceAccountCredentials" -}}
{{- $on := false -}}
{{- range .args -}}
{{- $a := toString . -}}
{{- if eq $a "--use-service-account-credentials" }}{{ $on = true }}
{{- else if hasPrefix "--use-service-account-credentials=" $a }}{{ $on = has (lower (trimPrefix "--use-service-account-credentials=" $a)) (list "true" "t" "1") }}{{ end -}}
{{- end -}}
{{- if $on }}true{{ end -}}
{{- end -}}

{{/* ccm.controllerOn: "true" when controller .name runs under the --controllers of .args (every one when unset). */}}
{{- define "ccm.controllerOn" -}}
{{- $v := include "ccm.flag" (dict "args" .args "name" "controllers") -}}
{{- $l := splitList "," $v -}}
{{- if or (eq $v "") (and (not (has (printf "-%s" .name) $l)) (or (has .name $l) (has "*" $l))) }}true{{ end -}}
{{- end -}}

{{/*
ccm.clients: with --use-service-account-credentials, the library hands every controller, and
the provider's Initialize, a client that authenticates as kube-system/<client name> (always
kube-system, whatever the ccm's namespace). These are the client names ccm's code asks for, for
the controllers that run, each with the rules that client's calls need (informers list and
watch through the ccm's own identity, not these):
  node-controller: the cloud node and node lifecycle controllers (labels, taints, addresses,
    deleting a Node whose machine is gone); service-controller: ccm's service controller, which
    writes finalizers and load balancer status through services/status; route-controller: the
    NetworkUnavailable condition, only for a provider with routes (.routes) while
    --configure-cloud-routes is on; ccm-node-guard:
    the node deletion guard's Events; .providerClient: the provider's own (Events, and what the
    chart's settings add).
Node-controller, service-controller and route-controller are also kube-controller-manager's
names, which the API server's bootstrap policy binds to its own roles: those bindings are not
counted on.
*/}}
{{- define "ccm.clients" -}}
{{- $events := dict "apiGroups" (list "" "events.k8s.io") "resources" (list "events") "verbs" (list "create" "patch" "update") -}}
{{- $on := dict "args" .args -}}
{{- $out := list -}}
{{- if or (include "ccm.controllerOn" (merge (dict "name" "cloud-node-controller") $on)) (include "ccm.controllerOn" (merge (dict "name" "cloud-node-lifecycle-controller") $on)) -}}
{{- $out = append $out (dict "name" "node-controller" "why" "The cloud node and node lifecycle controllers: Node labels, taints and addresses, and deleting a Node whose machine is gone."
      "rules" (list (dict "apiGroups" (list "") "resources" (list "nodes") "verbs" (list "get" "update" "patch" "delete"))
                    (dict "apiGroups" (list "") "resources" (list "nodes/status") "verbs" (list "patch"))
                    $events)) -}}
{{- end -}}
{{- if include "ccm.controllerOn" (merge (dict "name" "service-lb-controller") $on) -}}
{{- $out = append $out (dict "name" "service-controller" "why" "The service controller: finalizers and load balancer status, both written through services/status."
      "rules" (list (dict "apiGroups" (list "") "resources" (list "services/status") "verbs" (list "patch")) $events)) -}}
{{- end -}}
{{- if and .routes (ne (include "ccm.flag" (dict "args" .args "name" "configure-cloud-routes")) "false") (include "ccm.controllerOn" (merge (dict "name" "node-route-controller") $on)) -}}
{{- $out = append $out (dict "name" "route-controller" "why" "The route controller: the NetworkUnavailable condition of Nodes."
      "rules" (list (dict "apiGroups" (list "") "resources" (list "nodes/status") "verbs" (list "patch")) $events)) -}}
{{- end -}}
{{- $out = append $out (dict "name" "ccm-node-guard" "why" "The node deletion guard: NodeDeletionHeld Events." "rules" (list $events)) -}}
{{- with .providerClient -}}
{{- $out = append $out (dict "name" .name "why" .why "rules" (append (.rules | default list) $events)) -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}
