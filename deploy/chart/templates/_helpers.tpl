{{/* Names and labels shared by every object. */}}
{{- define "gpuplatform.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "gpuplatform.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "gpuplatform.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "gpuplatform.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "gpuplatform.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .root.Values.existingSecret }}
      key: {{ .key }}
{{- end -}}

{{/* The environment of every service process: plain settings from the ConfigMap, secrets by reference. */}}
{{- define "gpuplatform.env" -}}
envFrom:
  - configMapRef:
      name: {{ include "gpuplatform.fullname" . }}
env:
{{ include "gpuplatform.secretEnv" (dict "root" . "name" "SECRET_KEY" "key" .Values.secretKeys.secretKey) | indent 2 }}
{{ include "gpuplatform.secretEnv" (dict "root" . "name" "GPUPLATFORM_ENCRYPTION_KEY" "key" .Values.secretKeys.encryptionKey) | indent 2 }}
{{ include "gpuplatform.secretEnv" (dict "root" . "name" "POLICY_SIGNING_KEY" "key" .Values.secretKeys.policySigningKey) | indent 2 }}
{{ include "gpuplatform.secretEnv" (dict "root" . "name" "DATABASE_URL" "key" .Values.secretKeys.databaseUrl) | indent 2 }}
{{ include "gpuplatform.secretEnv" (dict "root" . "name" "REDIS_URL" "key" .Values.secretKeys.redisUrl) | indent 2 }}
{{ include "gpuplatform.secretEnv" (dict "root" . "name" "METRICS_TOKEN" "key" .Values.secretKeys.metricsToken) | indent 2 }}
{{- if .Values.oidc.enabled }}
{{ include "gpuplatform.secretEnv" (dict "root" . "name" "OIDC_CLIENT_SECRET" "key" .Values.oidc.clientSecretKey) | indent 2 }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . | indent 2 }}
{{- end }}
{{- end -}}

{{/* Scratch space: the root filesystem is read-only. */}}
{{- define "gpuplatform.tmp" -}}
volumeMounts:
  - name: tmp
    mountPath: /tmp
{{- end -}}

{{- define "gpuplatform.pod" -}}
serviceAccountName: {{ .serviceAccount }}
automountServiceAccountToken: {{ .automount }}
securityContext:
{{ toYaml .root.Values.podSecurityContext | indent 2 }}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
{{ toYaml . | indent 2 }}
{{- end }}
volumes:
  - name: tmp
    emptyDir: {}
{{- end -}}
