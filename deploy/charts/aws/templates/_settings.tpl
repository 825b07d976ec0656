{{/* The upstream aws-cloud-controller-manager chart's values as the settings object of _ccm.tpl. */}}
{{- define "ccm.settings" -}}
{{- $v := .Values -}}
{{- $c := $v.ccm -}}
{{- $name := $v.nameOverride | default "aws-cloud-controller-manager" | trunc 63 | trimSuffix "-" -}}
{{- $ns := $v.namespace | default .Release.Namespace -}}
{{- $user := concat ($v.args | default list) ($c.extraArgs | default list) -}}
{{- $cluster := $c.clusterName | default (include "ccm.flag" (dict "args" $user "name" "cluster-name")) -}}
{{- /* The operator's own --cloud-config (mounted through extraVolumes) wins over ours. */ -}}
{{- $own := include "ccm.flag" (dict "args" $user "name" "cloud-config") -}}
{{- $mount := "/etc/ccm" -}}
{{- $hostNet := ternary true $v.hostNetworking (kindIs "invalid" $v.hostNetworking) -}}
{{- $ini := "" -}}
{{- $notes := list -}}
{{- if not $own -}}
{{- $g := deepCopy ($c.cloudConfig.global | default dict) -}}
{{- if not (or $g.Region $g.Zone) -}}
{{- range $v.env }}{{ if and (has .name (list "AWS_REGION" "AWS_DEFAULT_REGION")) .value (not $g.Region) }}{{ $_ := set $g "Region" .value }}{{ end }}{{ end -}}
{{- end -}}
{{- $parts := list (include "ccm.iniSection" (dict "name" "Global" "keys" $g)) -}}
{{- range $n, $keys := $c.cloudConfig.serviceOverride -}}
{{- $parts = append $parts (include "ccm.iniSection" (dict "name" "ServiceOverride" "sub" $n "keys" $keys)) -}}
{{- end -}}
{{- $ini = printf "%s\n" (join "\n\n" $parts) -}}
{{- if not (and (or $g.Region $g.Zone) (or $g.KubernetesClusterID $g.KubernetesClusterTag)) -}}
{{- $notes = append $notes (printf "ccm asks the instance metadata service (IMDSv2) at start for what the cloud-config leaves out (region; cluster ID from the instance's kubernetes.io/cluster/<id> tag), as the upstream CCM does.%s Or set ccm.cloudConfig.global.Region and KubernetesClusterID." (ternary "" " Without the host network a Pod reaches IMDSv2 only with the instance's HttpPutResponseHopLimit at 2 or more." $hostNet)) -}}
{{- end -}}
{{- end -}}
{{- $extra := $user -}}
{{- if not (or (include "ccm.hasFlag" (dict "args" $user "name" "configure-cloud-routes")) (include "ccm.hasFlag" (dict "args" $user "name" "cluster-cidr"))) -}}
{{- /* As deploy/aws: with routes on (the library's default) it would exit at start without --cluster-cidr. */ -}}
{{- $extra = prepend $extra "--configure-cloud-routes=false" -}}
{{- end -}}
{{- $probes := include "ccm.probes" (dict "hostNetwork" $hostNet) | fromYaml -}}
{{- $args := include "ccm.args" (dict "provider" "aws" "config" (ternary "" (printf "%s/cloud.conf" $mount) (ne $own ""))
      "cluster" $cluster "allowDefault" $c.allowDefaultClusterName "listenAll" (not $hostNet)
      "v" nil "extra" $extra) | fromYamlArray -}}
{{- $s := dict
      "provider" "aws"
      "name" $name
      "namespace" $ns
      "selector" (dict "k8s-app" $name)
      "labels" (dict "app.kubernetes.io/name" $name)
      "annotations" dict
      "podLabels" dict
      "podAnnotations" $v.podAnnotations
      "serviceAccount" (dict "create" true "name" $v.serviceAccountName "annotations" (($v.serviceAccount | default dict).annotations))
      "rbac" (dict "create" true "clusterRole" $v.clusterRoleName
                "authReaderBinding" $v.roleBindingName
                "authReaderRole" $v.roleName
                "providerClient" (dict "name" "cloud-controller-manager" "why" "The AWS provider: Events on Services." "rules" list)
                "providerRoles" list)
      "lease" (dict "name" ((include "ccm.flag" (dict "args" $user "name" "leader-elect-resource-name")) | default "cloud-controller-manager")
                  "namespace" ((include "ccm.flag" (dict "args" $user "name" "leader-elect-resource-namespace")) | default "kube-system"))
      "config" (dict "create" (and (not $own) $c.secret.create) "name" $c.secret.name "key" "cloud.conf" "content" $ini
                  "mountPath" $mount "volume" (ternary nil (dict "secret" (dict "secretName" $c.secret.name)) (ne $own "")))
      "args" $args
      "cluster" $cluster
      "image" (include "ccm.image" .)
      "imagePullPolicy" $c.image.pullPolicy
      "imagePullSecrets" $v.imagePullSecrets
      "hostNetwork" $hostNet
      "dnsPolicy" $v.dnsPolicy
      "priorityClassName" "system-node-critical"
      "nodeSelector" $v.nodeSelector
      "tolerations" $v.tolerations
      "resources" $v.resources
      "podSecurityContext" $v.podSecurityContext
      "securityContext" $v.securityContext
      "env" $v.env
      "extraVolumes" $v.extraVolumes
      "extraVolumeMounts" $v.extraVolumeMounts
      "livenessProbe" $probes.liveness
      "readinessProbe" $probes.readiness
      "routes" true
      "prometheusRule" ($c.prometheusRule | default dict)
      "serviceMonitor" (dict "enabled" false)
      "notes" $notes
      "report" (include "ccm.report" (dict "values" $v
        "unused" (list "image" "clusterRoleRules" "global")
        "known" (list "ccm" "namespace" "args" "image" "imagePullSecrets" "nameOverride" "nodeSelector" "clusterRoleRules" "resources" "env" "securityContext" "podSecurityContext" "podAnnotations" "tolerations" "dnsPolicy" "clusterRoleName" "roleBindingName" "serviceAccountName" "serviceAccount" "roleName" "extraVolumes" "extraVolumeMounts" "hostNetworking" "global")) | fromYaml)
-}}
{{- toYaml $s -}}
{{- end -}}
