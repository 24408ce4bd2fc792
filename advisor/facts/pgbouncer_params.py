"""PgBouncer [pgbouncer] parameters per version: name -> (type, default, no_reload).

Generated from src/main.c `bouncer_params[]` at tags pgbouncer_1_18_0 ... pgbouncer_1_25_0
of github.com/pgbouncer/pgbouncer (WIN32-only keys left out). Types: "int" (CF_INT and
tcp_defer_accept's DEFER_OPS: C strtol, base 0), "uint" (CF_UINT, strtoul), "time"
(CF_TIME_USEC: seconds as a decimal number, no units), "str" (CF_STR, CF_AUTHDB),
"lookup:<map>" (CF_LOOKUP, case-insensitive). A None default is not reset by a
[pgbouncer] header (libusual cfparser.c fill_defaults skips keys without def_value).
Platform macros: DEFAULT_TCP_DEFER_ACCEPT = "1" (Linux), DEFAULT_UNIX_SOCKET_DIR = "/tmp".
1.18 auth_query is Debian 1.18.0-1+deb12u1's default (CVE-2025-2291 backport), checked
against the real binary's SHOW CONFIG.
"""

from __future__ import annotations

ParamSpec = tuple[str, str | None, bool]

_AUTH_QUERY_VALID_UNTIL = (
    "SELECT rolname, CASE WHEN rolvaliduntil < now() THEN NULL ELSE rolpassword END"
    " FROM pg_authid WHERE rolname=$1 AND rolcanlogin"
)

PARAMS_1_18: dict[str, ParamSpec] = {
    "admin_users": ("str", "", False),
    "application_name_add_host": ("int", "0", False),
    "auth_file": ("str", None, False),
    "auth_hba_file": ("str", "", False),
    "auth_query": ("str", _AUTH_QUERY_VALID_UNTIL, False),
    "auth_type": ("lookup:auth_type_map", "md5", False),
    "auth_user": ("str", None, False),
    "autodb_idle_timeout": ("time", "3600", False),
    "client_idle_timeout": ("time", "0", False),
    "client_login_timeout": ("time", "60", False),
    "client_tls_ca_file": ("str", "", False),
    "client_tls_cert_file": ("str", "", False),
    "client_tls_ciphers": ("str", "fast", False),
    "client_tls_dheparams": ("str", "auto", False),
    "client_tls_ecdhcurve": ("str", "auto", False),
    "client_tls_key_file": ("str", "", False),
    "client_tls_protocols": ("str", "secure", False),
    "client_tls_sslmode": ("lookup:sslmode_map", "disable", False),
    "conffile": ("str", None, False),
    "default_pool_size": ("int", "20", False),
    "disable_pqexec": ("int", "0", True),
    "dns_max_ttl": ("time", "15", False),
    "dns_nxdomain_ttl": ("time", "15", False),
    "dns_zone_check_period": ("time", "0", False),
    "idle_transaction_timeout": ("time", "0", False),
    "ignore_startup_parameters": ("str", "", False),
    "job_name": ("str", "pgbouncer", True),
    "listen_addr": ("str", "", True),
    "listen_backlog": ("int", "128", True),
    "listen_port": ("int", "6432", True),
    "log_connections": ("int", "1", False),
    "log_disconnections": ("int", "1", False),
    "log_pooler_errors": ("int", "1", False),
    "log_stats": ("int", "1", False),
    "logfile": ("str", "", False),
    "max_client_conn": ("int", "100", False),
    "max_db_connections": ("int", "0", False),
    "max_packet_size": ("uint", "2147483647", False),
    "max_user_connections": ("int", "0", False),
    "min_pool_size": ("int", "0", False),
    "pidfile": ("str", "", True),
    "pkt_buf": ("int", "4096", True),
    "pool_mode": ("lookup:pool_mode_map", "session", False),
    "query_timeout": ("time", "0", False),
    "query_wait_timeout": ("time", "120", False),
    "reserve_pool_size": ("int", "0", False),
    "reserve_pool_timeout": ("time", "5", False),
    "resolv_conf": ("str", "", True),
    "sbuf_loopcnt": ("int", "5", False),
    "server_check_delay": ("time", "30", False),
    "server_check_query": ("str", "select 1", False),
    "server_connect_timeout": ("time", "15", False),
    "server_fast_close": ("int", "0", False),
    "server_idle_timeout": ("time", "600", False),
    "server_lifetime": ("time", "3600", False),
    "server_login_retry": ("time", "15", False),
    "server_reset_query": ("str", "DISCARD ALL", False),
    "server_reset_query_always": ("int", "0", False),
    "server_round_robin": ("int", "0", False),
    "server_tls_ca_file": ("str", "", False),
    "server_tls_cert_file": ("str", "", False),
    "server_tls_ciphers": ("str", "fast", False),
    "server_tls_key_file": ("str", "", False),
    "server_tls_protocols": ("str", "secure", False),
    "server_tls_sslmode": ("lookup:sslmode_map", "disable", False),
    "so_reuseport": ("int", "0", True),
    "stats_period": ("int", "60", False),
    "stats_users": ("str", "", False),
    "suspend_timeout": ("time", "10", False),
    "syslog": ("int", "0", False),
    "syslog_facility": ("str", "daemon", False),
    "syslog_ident": ("str", "pgbouncer", False),
    "tcp_defer_accept": ("int", "1", False),
    "tcp_keepalive": ("int", "1", False),
    "tcp_keepcnt": ("int", "0", False),
    "tcp_keepidle": ("int", "0", False),
    "tcp_keepintvl": ("int", "0", False),
    "tcp_socket_buffer": ("int", "0", False),
    "tcp_user_timeout": ("int", "0", False),
    "unix_socket_dir": ("str", "/tmp", True),
    "unix_socket_group": ("str", "", True),
    "unix_socket_mode": ("int", "0777", True),
    "user": ("str", None, True),
    "verbose": ("int", None, False),
}

# Changes from the previous version: added or changed keys, and removed keys.
CHANGES: dict[tuple[int, int], tuple[dict[str, ParamSpec], tuple[str, ...]]] = {
    (1, 19): (
        {
            "auth_dbname": ("str", None, False),
            "auth_query": ("str", "SELECT usename, passwd FROM pg_shadow WHERE usename=$1", False),
            "cancel_wait_timeout": ("time", "10", False),
            "peer_id": ("int", "0", False),
        },
        (),
    ),
    (1, 20): (
        {
            "server_tls_sslmode": ("lookup:sslmode_map", "prefer", False),
            "track_extra_parameters": ("str", "IntervalStyle", True),
        },
        (),
    ),
    (1, 21): (
        {
            "client_tls_ciphers": ("str", "default", False),
            "max_prepared_statements": ("int", "0", False),
            "server_tls_ciphers": ("str", "default", False),
        },
        (),
    ),
    (1, 22): (
        {},
        (),
    ),
    (1, 23): (
        {
            "auth_ident_file": ("str", None, False),
        },
        (),
    ),
    (1, 24): (
        {
            "max_db_client_connections": ("int", "0", False),
            "max_prepared_statements": ("int", "200", False),
            "max_user_client_connections": ("int", "0", False),
        },
        (),
    ),
    (1, 25): (
        {
            "auth_ldap_options": ("str", None, False),
            "auth_query": ("str", _AUTH_QUERY_VALID_UNTIL, False),
            "client_tls13_ciphers": ("str", None, False),
            "query_wait_notify": ("int", "5", False),
            "server_check_query": ("str", "<empty>", False),
            "server_tls13_ciphers": ("str", None, False),
            "transaction_timeout": ("time", "0", False),
        },
        (),
    ),
}

LOOKUPS: dict[str, tuple[str, ...]] = {
    "auth_type_map": ("any", "trust", "plain", "md5", "cert", "hba", "pam", "scram-sha-256"),
    "load_balance_hosts_map": ("disable", "round-robin"),
    "pool_mode_map": ("session", "transaction", "statement"),
    "sslmode_map": ("disable", "allow", "prefer", "require", "verify-ca", "verify-full"),
}
# 1.25 adds auth_type "ldap".
LOOKUPS_1_25_EXTRA: dict[str, tuple[str, ...]] = {"auth_type_map": ("ldap",)}
