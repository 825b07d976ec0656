{{/* The upstream vsphere-cpi chart's values as the settings object of _ccm.tpl. */}}
{{- define "ccm.settings" -}}
{{- $v := .Values -}}
{{- $c := $v.ccm -}}
{{- $ds := $v.daemonset -}}
{{- $name := $v.nameOverride | default "vsphere-cpi" | trunc 63 | trimSuffix "-" -}}
{{- $ns := .Release.Namespace -}}
{{- /* As upstream: global.config overrides config (umbrella charts). */ -}}
{{- $cfg := deepCopy $v.config -}}
{{- if and $v.global (kindIs "map" $v.global) $v.global.config }}{{ $cfg = mergeOverwrite $cfg (deepCopy $v.global.config) }}{{ end -}}
{{- $extra := list -}}
{{- range $k, $val := $ds.cmdline.additionalParams -}}
{{- if or (kindIs "invalid" $val) (eq (toString $val) "") }}{{ $extra = append $extra (printf "--%s" $k) }}{{ else }}{{ $extra = append $extra (printf "--%s=%v" $k $val) }}{{ end -}}
{{- end -}}
{{- $extra = concat $extra ($c.extraArgs | default list) -}}
{{- /* ccm.leaseName wins over a leader-elect-resource-name among the flags, as ccm.clusterName does. */ -}}
{{- if $c.leaseName -}}
{{- $keep := list -}}
{{- range $extra }}{{ if not (hasPrefix "--leader-elect-resource-name=" (toString .)) }}{{ $keep = append $keep . }}{{ end }}{{ end -}}
{{- $extra = $keep -}}
{{- if ne $c.leaseName "cloud-controller-manager" }}{{ $extra = prepend $extra (printf "--leader-elect-resource-name=%s" $c.leaseName) }}{{ end -}}
{{- end -}}
{{- $cluster := $c.clusterName | default (include "ccm.flag" (dict "args" $extra "name" "cluster-name")) | default "kubernetes" -}}
{{- $dir := $ds.cmdline.cloudConfig.dir | default "/etc/cloud" -}}
{{- $file := $ds.cmdline.cloudConfig.file | default "vsphere.conf" -}}
{{- $conf := "" -}}
{{- $volume := dict "configMap" (dict "name" "cloud-config") -}}
{{- if $cfg.enabled -}}
{{- $g := dict "port" "443" "secretName" $cfg.secret.name "secretNamespace" $ns -}}
{{- if $cfg.thumbprint }}{{ $_ := set $g "thumbprint" $cfg.thumbprint }}
{{- else if $cfg.caFile }}{{ $_ := set $g "caFile" $cfg.caFile }}
{{- else }}{{ $_ := set $g "insecureFlag" true }}{{ end -}}
{{- $dcs := list -}}
{{- range splitList "," (toString $cfg.datacenter) }}{{ if trim . }}{{ $dcs = append $dcs (trim .) }}{{ end }}{{ end -}}
{{- $y := dict "global" $g
      "vcenter" (dict (toString $cfg.vcenter) (dict "server" (toString $cfg.vcenter) "datacenters" $dcs))
      "labels" (dict "region" $cfg.region "zone" $cfg.zone) -}}
{{- $nodes := dict -}}
{{- range $k, $val := ($cfg.nodes | default dict) }}{{ if $val }}{{ $_ := set $nodes $k $val }}{{ end }}{{ end -}}
{{- if $nodes }}{{ $_ := set $y "nodes" $nodes }}{{ end -}}
{{- $y = mergeOverwrite $y (deepCopy ($c.cloudConfig | default dict)) -}}
{{- $conf = printf "# vsphere.conf rendered by the ccm-vsphere chart from the vsphere-cpi values.\n%s" (toYaml $y) -}}
{{- $volume = dict "secret" (dict "secretName" $cfg.name) -}}
{{- end -}}
{{- $notes := list -}}
{{- if not $cfg.enabled -}}
{{- $notes = append $notes (printf "config.enabled is false: ccm reads vsphere.conf from your ConfigMap %s/cloud-config, as upstream does. It may read only the credentials Secret %s/%s (its RBAC names it): if your vsphere.conf names another secret-name, set config.secret.name to it." $ns $ns $cfg.secret.name) -}}
{{- end -}}
{{- $creds := list -}}
{{- if and $cfg.enabled $cfg.secret.create -}}
{{- $creds = list (dict "name" $cfg.secret.name "data" (dict (printf "%s.username" $cfg.vcenter) $cfg.username (printf "%s.password" $cfg.vcenter) $cfg.password)) -}}
{{- end -}}
{{- $psc := deepCopy $c.podSecurityContext -}}
{{- if $v.securityContext.enabled }}{{ $psc = mergeOverwrite $psc (dict "runAsUser" $v.securityContext.runAsUser "fsGroup" $v.securityContext.fsGroup) }}{{ end -}}
{{- $probes := include "ccm.probes" (dict "hostNetwork" true) | fromYaml -}}
{{- $args := include "ccm.args" (dict "provider" "vsphere" "config" (printf "%s/%s" $dir $file)
      "cluster" $cluster "allowDefault" $c.allowDefaultClusterName "listenAll" false
      "v" $ds.cmdline.logging "extra" $extra) | fromYamlArray -}}
{{- $sa := $v.serviceAccount.name | default "cloud-controller-manager" -}}
{{- $s := dict
      "provider" "vsphere"
      "name" $name
      "namespace" $ns
      "selector" (dict "app" $name)
      "labels" (dict "app.kubernetes.io/name" $name)
      "annotations" dict
      "daemonSetAnnotations" $ds.annotations
      "podLabels" $ds.podLabels
      "podAnnotations" $ds.podAnnotations
      "serviceAccount" (dict "create" $v.serviceAccount.create "name" $sa)
      "rbac" (dict "create" $v.rbac.create "clusterRole" $sa
                "authReaderBinding" (printf "%s:apiserver-authentication-reader" $sa)
                "authReaderRole" "extension-apiserver-authentication-reader"
                "providerClient" (dict "name" "vsphere-cloud-provider" "why" "The vSphere provider: Events on Services; the credentials Secret comes with the vsphere-credentials Role." "rules" list)
                "providerRoles" (list (dict "name" "vsphere-credentials" "namespace" $ns
                  "why" "ccm reads the vCenter credentials from this one Secret, again every 10 s (a rotated password is used without a restart)."
                  "rules" (list (dict "apiGroups" (list "") "resources" (list "secrets") "resourceNames" (list $cfg.secret.name) "verbs" (list "get"))))))
      "lease" (dict "name" ((include "ccm.flag" (dict "args" $extra "name" "leader-elect-resource-name")) | default "cloud-controller-manager")
                  "namespace" ((include "ccm.flag" (dict "args" $extra "name" "leader-elect-resource-namespace")) | default "kube-system"))
      "config" (dict "create" $cfg.enabled "name" $cfg.name "key" $file "content" $conf "mountPath" $dir "volume" $volume)
      "extraSecrets" $creds
      "args" $args
      "cluster" $cluster
      "image" (include "ccm.image" .)
      "imagePullPolicy" ($c.image.pullPolicy | default $ds.pullPolicy)
      "hostNetwork" true
      "dnsPolicy" $ds.dnsPolicy
      "priorityClassName" "system-node-critical"
      "nodeSelector" $ds.nodeSelector
      "affinity" $ds.affinity
      "tolerations" $ds.tolerations
      "hostAliases" $ds.hostAliases
      "resources" ($ds.resources | default $c.resources)
      "podSecurityContext" $psc
      "securityContext" $c.securityContext
      "extraVolumes" $ds.extraVolumes
      "extraVolumeMounts" $ds.extraVolumeMounts
      "livenessProbe" $probes.liveness
      "readinessProbe" $probes.readiness
      "routes" false
      "prometheusRule" ($c.prometheusRule | default dict)
      "serviceMonitor" (dict "enabled" false)
      "notes" $notes
      "report" (include "ccm.report" (dict "values" $v
        "unused" (list "podSecurityPolicy" "daemonset.image" "daemonset.tag" "daemonset.replicaCount" "daemonset.extraVolumesMounts" "daemonset.fullnameOverride" "fullnameOverride" "service")
        "known" (list "ccm" "config" "podSecurityPolicy" "securityContext" "rbac" "serviceAccount" "daemonset" "nameOverride" "fullnameOverride" "global" "service")) | fromYaml)
-}}
{{- toYaml $s -}}
{{- end -}}
