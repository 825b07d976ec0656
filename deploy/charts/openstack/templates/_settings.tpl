{{/* The upstream openstack-cloud-controller-manager chart's values as the settings object of _ccm.tpl. */}}
{{- define "ccm.settings" -}}
{{- $v := .Values -}}
{{- $c := $v.ccm -}}
{{- $name := $v.nameOverride | default "openstack-cloud-controller-manager" | trunc 63 | trimSuffix "-" -}}
{{- /* controllerExtraArgs: upstream takes a templated string holding a YAML list. */ -}}
{{- $extra := list -}}
{{- $cea := $v.controllerExtraArgs -}}
{{- if kindIs "string" $cea }}{{ $extra = tpl $cea $ | fromYamlArray }}
{{- else if kindIs "slice" $cea }}{{ $extra = $cea }}
{{- else if $cea }}{{ range $k, $val := $cea }}{{ $extra = append $extra (printf "--%s=%v" $k $val) }}{{ end }}
{{- end -}}
{{- $extra = concat $extra ($c.extraArgs | default list) -}}
{{- $cluster := $c.clusterName | default (include "ccm.flag" (dict "args" $extra "name" "cluster-name")) | default (($v.cluster | default dict).name) | default "kubernetes" -}}
{{- $sec := $v.secret | default dict -}}
{{- $secEnabled := ternary true $sec.enabled (kindIs "invalid" $sec.enabled) -}}
{{- $secName := $sec.name | default "cloud-config" -}}
{{- $cc := $v.cloudConfig | default dict -}}
{{- $ini := "" -}}
{{- if $v.cloudConfigContents }}{{ $ini = $v.cloudConfigContents }}{{ else -}}
{{- $parts := list -}}
{{- range $sect := list (list "Global" "global") (list "Networking" "networking") (list "LoadBalancer" "loadBalancer") (list "BlockStorage" "blockStorage") (list "Metadata" "metadata") (list "Route" "route") -}}
{{- $parts = append $parts (include "ccm.iniSection" (dict "name" (index $sect 0) "keys" (index $cc (index $sect 1) | default dict))) -}}
{{- end -}}
{{- range $cls, $keys := $c.loadBalancerClasses -}}
{{- $parts = append $parts (include "ccm.iniSection" (dict "name" "LoadBalancerClass" "sub" $cls "keys" $keys)) -}}
{{- end -}}
{{- $ini = printf "%s\n" (join "\n\n" $parts) -}}
{{- end -}}
{{- $metrics := dig "enabled" false ($v.serviceMonitor | default dict) -}}
{{- $probes := include "ccm.probes" (dict "hostNetwork" true) | fromYaml -}}
{{- $args := include "ccm.args" (dict "provider" "openstack" "config" "/etc/config/cloud.conf"
      "cluster" $cluster "allowDefault" $c.allowDefaultClusterName "listenAll" $metrics
      "v" $v.logVerbosityLevel "controllers" $v.enabledControllers "extra" $extra) | fromYamlArray -}}
{{- $s := dict
      "provider" "openstack"
      "name" $name
      "namespace" .Release.Namespace
      "selector" (dict "component" "controllermanager" "app" $name "release" .Release.Name)
      "labels" (dict "app.kubernetes.io/name" $name)
      "annotations" $v.commonAnnotations
      "podLabels" $v.podLabels
      "podAnnotations" $v.podAnnotations
      "serviceAccount" (dict "create" true "name" $v.serviceAccountName)
      "rbac" (dict "create" true "clusterRole" $v.clusterRoleName
                "authReaderBinding" (printf "%s:apiserver-authentication-reader" $v.clusterRoleName)
                "authReaderRole" "extension-apiserver-authentication-reader"
                "providerClient" (dict "name" "openstack-cloud-provider" "why" "The OpenStack provider: the load-balancer-id and load-balancer-address annotations it writes onto Services, Events on Services." "rules" (list (dict "apiGroups" (list "") "resources" (list "services") "verbs" (list "patch"))))
                "providerRoles" list)
      "lease" (dict "name" ((include "ccm.flag" (dict "args" $extra "name" "leader-elect-resource-name")) | default "cloud-controller-manager")
                  "namespace" ((include "ccm.flag" (dict "args" $extra "name" "leader-elect-resource-namespace")) | default "kube-system"))
      "config" (dict "create" (and $secEnabled $sec.create) "name" $secName "key" "cloud.conf" "content" $ini
                  "mountPath" "/etc/config" "volume" (ternary (dict "secret" (dict "secretName" $secName)) nil $secEnabled))
      "args" $args
      "cluster" $cluster
      "image" (include "ccm.image" .)
      "imagePullPolicy" $c.image.pullPolicy
      "imagePullSecrets" $v.imagePullSecrets
      "hostNetwork" true
      "dnsPolicy" $v.dnsPolicy
      "priorityClassName" ($v.priorityClassName | default "system-node-critical")
      "nodeSelector" $v.nodeSelector
      "tolerations" $v.tolerations
      "hostAliases" $v.hostAliases
      "resources" $v.resources
      "podSecurityContext" $v.podSecurityContext
      "securityContext" $v.securityContext
      "env" $v.extraEnv
      "initContainers" $v.extraInitContainers
      "extraVolumes" $v.extraVolumes
      "extraVolumeMounts" $v.extraVolumeMounts
      "livenessProbe" ($v.livenessProbe | default $probes.liveness)
      "readinessProbe" ($v.readinessProbe | default $probes.readiness)
      "routes" false
      "prometheusRule" ($c.prometheusRule | default dict)
      "serviceMonitor" (dict "enabled" $metrics "additionalLabels" (dig "additionalLabels" dict ($v.serviceMonitor | default dict)) "interval" (dig "interval" "30s" ($v.serviceMonitor | default dict)))
      "report" (include "ccm.report" (dict "values" $v
        "unused" (list "image" "global" "common")
        "known" (list "ccm" "commonAnnotations" "imagePullSecrets" "image" "extraInitContainers" "extraEnv" "resources" "livenessProbe" "readinessProbe" "dnsPolicy" "nodeSelector" "tolerations" "podAnnotations" "podLabels" "podSecurityContext" "securityContext" "enabledControllers" "controllerExtraArgs" "serviceMonitor" "secret" "logVerbosityLevel" "cloudConfig" "cloudConfigContents" "hostAliases" "priorityClassName" "extraVolumes" "extraVolumeMounts" "cluster" "clusterRoleName" "serviceAccountName" "nameOverride" "global" "common")) | fromYaml)
-}}
{{- toYaml $s -}}
{{- end -}}
