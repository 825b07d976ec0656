{{/* The dummy chart's values as the settings object of _ccm.tpl. */}}
{{- define "ccm.settings" -}}
{{- $v := .Values -}}
{{- $c := $v.ccm -}}
{{- $mount := "/etc/ccm" -}}
{{- $metrics := $v.serviceMonitor.enabled | default false -}}
{{- $probes := include "ccm.probes" (dict "hostNetwork" true) | fromYaml -}}
{{- $name := $c.name | default "cloud-controller-manager" -}}
{{- $lease := $c.leaseName | default $name -}}
{{- $extra := $c.extraArgs | default list -}}
{{- if ne $lease "cloud-controller-manager" }}{{ $extra = prepend $extra (printf "--leader-elect-resource-name=%s" $lease) }}{{ end -}}
{{- $args := include "ccm.args" (dict "provider" "dummy" "config" (printf "%s/cloud.conf" $mount)
      "cluster" $c.clusterName "allowDefault" $c.allowDefaultClusterName "listenAll" $metrics
      "v" $v.logVerbosityLevel "controllers" $v.enabledControllers "extra" $extra) | fromYamlArray -}}
{{- $store := list (dict "apiGroups" (list "") "resources" (list "configmaps") "verbs" (list "create"))
      (dict "apiGroups" (list "") "resources" (list "configmaps") "verbs" (list "get" "update" "patch")
        "resourceNames" (list "ccm-dummy-lb-0" "ccm-dummy-lb-1" "ccm-dummy-lb-2" "ccm-dummy-lb-3" "ccm-dummy-lb-4" "ccm-dummy-lb-5" "ccm-dummy-lb-6" "ccm-dummy-lb-7")) -}}
{{- $s := dict
      "provider" "dummy"
      "name" $name
      "namespace" .Release.Namespace
      "selector" (dict "app.kubernetes.io/name" $name)
      "labels" (dict "app.kubernetes.io/name" $name)
      "annotations" $v.commonAnnotations
      "podLabels" $v.podLabels
      "podAnnotations" $v.podAnnotations
      "serviceAccount" (dict "create" true "name" $v.serviceAccountName)
      "rbac" (dict "create" true "clusterRole" $v.clusterRoleName
                "authReaderBinding" (printf "%s:apiserver-authentication-reader" $v.clusterRoleName)
                "authReaderRole" "extension-apiserver-authentication-reader"
                "providerClient" (dict "name" "dummy-cloud-provider" "why" "The dummy provider: the addresses Services already hold (a list of Services), Events on Services; its records in ConfigMaps come with the dummy-store Role." "rules" (list (dict "apiGroups" (list "") "resources" (list "services") "verbs" (list "list"))))
                "providerRoles" (list (dict "name" "dummy-store" "namespace" "kube-system" "rules" $store
                  "why" "The dummy cloud keeps its load balancer records in ConfigMaps kube-system/ccm-dummy-lb-0..7.")))
      "lease" (dict "name" $lease "namespace" "kube-system")
      "config" (dict "create" $v.secret.create "name" $v.secret.name "key" "cloud.conf" "content" $c.cloudConfig
                  "mountPath" $mount "volume" (dict "secret" (dict "secretName" $v.secret.name)))
      "args" $args
      "cluster" $c.clusterName
      "image" (include "ccm.image" .)
      "imagePullPolicy" $c.image.pullPolicy
      "imagePullSecrets" $v.imagePullSecrets
      "hostNetwork" true
      "priorityClassName" ($v.priorityClassName | default "system-node-critical")
      "nodeSelector" $v.nodeSelector
      "tolerations" $v.tolerations
      "resources" $v.resources
      "podSecurityContext" $v.podSecurityContext
      "securityContext" $v.securityContext
      "env" $v.extraEnv
      "extraVolumes" $v.extraVolumes
      "extraVolumeMounts" $v.extraVolumeMounts
      "livenessProbe" $probes.liveness
      "readinessProbe" $probes.readiness
      "routes" false
      "prometheusRule" ($c.prometheusRule | default dict)
      "serviceMonitor" $v.serviceMonitor
      "report" (include "ccm.report" (dict "values" $v "unused" list "known" (list "ccm" "secret" "serviceAccountName" "clusterRoleName" "logVerbosityLevel" "enabledControllers" "nodeSelector" "tolerations" "resources" "podSecurityContext" "securityContext" "priorityClassName" "commonAnnotations" "podAnnotations" "podLabels" "imagePullSecrets" "extraEnv" "extraVolumes" "extraVolumeMounts" "serviceMonitor")) | fromYaml)
-}}
{{- toYaml $s -}}
{{- end -}}
