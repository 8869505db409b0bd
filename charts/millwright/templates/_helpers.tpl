{{/*
The labels of every object, Kubernetes' recommended ones.
*/}}
{{- define "millwright.labels" -}}
app.kubernetes.io/name: millwright
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/*
The manager's pod selector (and the metrics Service's).
*/}}
{{- define "millwright.managerSelector" -}}
app.kubernetes.io/name: millwright
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: manager
{{- end -}}

{{/*
The separate driver Deployment's pod selector (and its Service's).
*/}}
{{- define "millwright.driverSelector" -}}
app.kubernetes.io/name: millwright
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: driver
{{- end -}}

{{/*
The image reference: the chart's appVersion unless image.tag is set.
*/}}
{{- define "millwright.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "millwright.driverImage" -}}
{{ .Values.driver.image | default (include "millwright.image" .) }}
{{- end -}}

{{/*
Where the driver serves, as the driver's --endpoint: a unix socket in the
pod's shared emptyDir for a sidecar, every address of its pod for a
Deployment.
*/}}
{{- define "millwright.driverListen" -}}
{{- if eq .Values.driver.mode "sidecar" -}}
unix:///run/millwright/{{ .Values.driver.name }}.sock
{{- else -}}
tcp://:{{ .Values.driver.port }}
{{- end -}}
{{- end -}}

{{/*
Where the manager dials the driver, its --driver NAME=ENDPOINT.
*/}}
{{- define "millwright.driverDial" -}}
{{- if eq .Values.driver.mode "sidecar" -}}
{{ .Values.driver.name }}=unix:///run/millwright/{{ .Values.driver.name }}.sock
{{- else -}}
{{ .Values.driver.name }}=tcp://millwright-driver.{{ .Release.Namespace }}.svc:{{ .Values.driver.port }}
{{- end -}}
{{- end -}}

{{/*
The hardening every container has: what the "restricted" Pod Security
Standard asks, and a read-only root filesystem.
*/}}
{{- define "millwright.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop:
  - ALL
{{- end -}}

{{- define "millwright.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/*
The driver container, as a native sidecar or in its own Deployment.
*/}}
{{- define "millwright.driverContainer" -}}
name: driver
image: {{ include "millwright.driverImage" . }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
command:
{{- toYaml .Values.driver.command | nindent 0 }}
args:
- --endpoint={{ include "millwright.driverListen" . }}
- --name={{ .Values.driver.name }}
{{- with .Values.driver.args }}
{{- toYaml . | nindent 0 }}
{{- end }}
securityContext:
  {{- include "millwright.containerSecurityContext" . | nindent 2 }}
resources:
  {{- toYaml .Values.driver.resources | nindent 2 }}
{{- end -}}

{{/*
The ClusterRole bound to the driver's identity: driver.clusterRole, where
auto means millwright-sim when the driver is the sim and none otherwise;
none at all with driver.mode none.
*/}}
{{- define "millwright.driverClusterRole" -}}
{{- if ne .Values.driver.mode "none" -}}
{{- if eq (toString .Values.driver.clusterRole) "auto" -}}
{{- if eq (base (first .Values.driver.command)) "millwright-sim" -}}
millwright-sim
{{- end -}}
{{- else -}}
{{ .Values.driver.clusterRole }}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The driver's ServiceAccount: its own in a Deployment, the manager's pod's
as a sidecar.
*/}}
{{- define "millwright.driverServiceAccount" -}}
{{ if eq .Values.driver.mode "deployment" }}millwright-driver{{ else }}millwright-manager{{ end }}
{{- end -}}

{{/*
Binds a ClusterRole on Secrets to a ServiceAccount: in every namespace
(a ClusterRoleBinding), or with manager.watchNamespace only there (a
RoleBinding referring to the ClusterRole grants its rules in the
RoleBinding's namespace alone). Takes a dict: root, name, role,
serviceAccount.
*/}}
{{- define "millwright.secretsBinding" -}}
{{- $root := .root -}}
apiVersion: rbac.authorization.k8s.io/v1
{{- if $root.Values.manager.watchNamespace }}
kind: RoleBinding
{{- else }}
kind: ClusterRoleBinding
{{- end }}
metadata:
  name: {{ .name }}
  {{- with $root.Values.manager.watchNamespace }}
  namespace: {{ . }}
  {{- end }}
  labels:
    {{- include "millwright.labels" $root | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ .role }}
subjects:
- kind: ServiceAccount
  name: {{ .serviceAccount }}
  namespace: {{ $root.Release.Namespace }}
{{- end -}}

{{/*
The Secrets of driver.tls: the driver's and the manager's client one.
*/}}
{{- define "millwright.driverTLSServerSecret" -}}
{{ .Values.driver.tls.serverSecret | default "millwright-driver-tls-server" }}
{{- end -}}

{{- define "millwright.driverTLSClientSecret" -}}
{{ .Values.driver.tls.clientSecret | default "millwright-driver-tls-client" }}
{{- end -}}
