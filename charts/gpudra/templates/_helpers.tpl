{{/* Object name prefix: the release name when it contains the chart name, else <release>-<chart>. */}}
{{- define "gpudra.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "gpudra.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "gpudra.webhookName" -}}{{ include "gpudra.fullname" . }}-webhook{{- end -}}
{{- define "gpudra.tlsSecret" -}}{{ include "gpudra.fullname" . }}-webhook-tls{{- end -}}
{{- define "gpudra.serviceDNS" -}}{{ include "gpudra.webhookName" . }}.{{ .Release.Namespace }}.svc{{- end -}}

{{- define "gpudra.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* Labels on every object. */}}
{{- define "gpudra.labels" -}}
app.kubernetes.io/name: {{ include "gpudra.name" . }}
app.kubernetes.io/part-of: gpudra
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Selector of one component's pods: {{ include "gpudra.selector" (list . "webhook") }} */}}
{{- define "gpudra.selector" -}}
{{- $ctx := index . 0 -}}
app.kubernetes.io/name: {{ include "gpudra.name" $ctx }}
app.kubernetes.io/instance: {{ $ctx.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{/* The pod securityContext: OpenShift's restricted-v2 SCC assigns the UID and GID from the namespace range. */}}
{{- define "gpudra.podSecurityContext" -}}
runAsNonRoot: true
{{- if not .Values.openshift.enabled }}
runAsUser: 65532
runAsGroup: 65532
{{- end }}
seccompProfile: {type: RuntimeDefault}
{{- end -}}

{{- define "gpudra.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities: {drop: ["ALL"]}
{{- end -}}

{{/* Annotations that bring the CA into the webhook configurations (cert-manager's or service-ca's injector). */}}
{{- define "gpudra.caInjection" -}}
{{- if .Values.openshift.enabled -}}
service.beta.openshift.io/inject-cabundle: "true"
{{- else if .Values.certManager.enabled -}}
cert-manager.io/inject-ca-from: {{ .Release.Namespace }}/{{ include "gpudra.webhookName" . }}
{{- end -}}
{{- end -}}

{{/* The namespaceSelector of both webhooks: never the release namespace, the excluded ones, or opted-out ones. */}}
{{- define "gpudra.namespaceSelector" -}}
matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values: {{ concat .Values.webhook.excludedNamespaces (list .Release.Namespace) | uniq | toJson }}
  - {key: {{ .Values.webhook.optOutLabel }}, operator: NotIn, values: [disabled]}
{{- end -}}

{{/* The caBundle of the self-managed certificates ("" when an injector fills it). */}}
{{- define "gpudra.caBundle" -}}
{{- if not (or .Values.openshift.enabled .Values.certManager.enabled) -}}
{{- $certs := include "gpudra.selfSignedCerts" . | fromYaml -}}
{{- if $certs.previousCA -}}
{{- printf "%s\n%s" ($certs.ca | trimSuffix "\n") $certs.previousCA | b64enc -}}
{{- else -}}
{{- $certs.ca | b64enc -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
Self-managed certificates, computed once per render and memoised in .Values (the Secret and both webhook
configurations must carry the same CA). An existing Secret is reused (lookup) unless it expires within
selfSigned.renewBeforeDays; then the webhooks' caBundle holds the new and the previous CA until the next upgrade.
`helm template` has no cluster, so it always generates (GitOps tools that render with it: use certManager).
*/}}
{{- define "gpudra.selfSignedCerts" -}}
{{- if not .Values._certs -}}
{{- $secret := lookup "v1" "Secret" .Release.Namespace (include "gpudra.tlsSecret" .) -}}
{{- $certs := dict -}}
{{- if and $secret $secret.data (index $secret.data "ca.crt") (index $secret.data "tls.crt") (index $secret.data "tls.key") -}}
{{- $crt := index $secret.data "tls.crt" | b64dec -}}
{{- $_ := set $certs "ca" (index $secret.data "ca.crt" | b64dec) -}}
{{- $_ := set $certs "crt" $crt -}}
{{- $_ := set $certs "key" (index $secret.data "tls.key" | b64dec) -}}
{{- $notAfter := index ($secret.metadata.annotations | default dict) "gpudra.io/not-after" | default "0" | int64 -}}
{{- $_ := set $certs "notAfter" $notAfter -}}
{{- if lt (sub $notAfter (now | unixEpoch | int64)) (mul .Values.selfSigned.renewBeforeDays 86400) -}}
{{- /* The pods serve the old certificate until their Secret volume updates (up to a minute or two): the webhooks
trust the old CA beside the new one meanwhile. */ -}}
{{- $certs = dict "previousCA" (index $secret.data "ca.crt" | b64dec) -}}
{{- end -}}
{{- end -}}
{{- if not $certs.ca -}}
{{- $dns := list (include "gpudra.serviceDNS" .) (printf "%s.cluster.local" (include "gpudra.serviceDNS" .)) -}}
{{- $ca := genCA (printf "%s-ca" (include "gpudra.fullname" .)) (int .Values.selfSigned.validityDays) -}}
{{- $cert := genSignedCert (include "gpudra.serviceDNS" .) nil $dns (int .Values.selfSigned.validityDays) $ca -}}
{{- $_ := set $certs "ca" $ca.Cert -}}
{{- $_ := set $certs "crt" $cert.Cert -}}
{{- $_ := set $certs "key" $cert.Key -}}
{{- $_ := set $certs "notAfter" (add (now | unixEpoch | int64) (mul .Values.selfSigned.validityDays 86400)) -}}
{{- end -}}
{{- $_ := set .Values "_certs" $certs -}}
{{- end -}}
{{- toYaml .Values._certs -}}
{{- end -}}
