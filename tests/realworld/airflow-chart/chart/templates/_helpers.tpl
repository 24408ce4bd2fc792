{{- define "airflow.db.host" -}}
{{- .Values.data.metadataConnection.host | default (printf "%s-postgresql.%s" .Release.Name .Release.Namespace) -}}
{{- end -}}

{{- define "pgbouncer_config" -}}
{{- $host := include "airflow.db.host" . -}}
{{- $db := .Values.data.metadataConnection.db -}}
{{- $port := .Values.data.metadataConnection.port -}}
[databases]
{{ .Release.Name }}-metadata = host={{ $host }} dbname={{ $db }} port={{ $port }} pool_size={{ .Values.pgbouncer.metadataPoolSize }}
{{ .Release.Name }}-result-backend = host={{ $host }} dbname={{ $db }} port={{ $port }} pool_size={{ .Values.pgbouncer.resultBackendPoolSize }}

[pgbouncer]
pool_mode = transaction
listen_port = 6543
listen_addr = *
auth_type = scram-sha-256
auth_file = /etc/pgbouncer/users.txt
ignore_startup_parameters = extra_float_digits
max_client_conn = {{ .Values.pgbouncer.maxClientConn }}
verbose = 0
log_disconnections = 0
log_connections = 0
{{- end -}}
